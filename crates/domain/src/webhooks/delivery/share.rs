//! When a workspace may go past its share of a process's slots: while its endpoints answer
//! quickly. A workspace's share (`InFlightCaps::per_workspace`) keeps the slots the other
//! workspaces need when its endpoints hang; a workspace whose endpoints answer within
//! [`QuickWorkspaces::QUICK`] gives its slots back as fast as it takes them, and holding it to
//! its share only leaves slots idle while nobody else waits. The claim then lets such a
//! workspace take, past its share, what no other workspace wants (`InFlightCaps::unshared`).
//!
//! A workspace is quick when one of its attempts was answered within `QUICK` in the last
//! [`QuickWorkspaces::VOUCHES_FOR`], and none of its attempts running now has waited longer than
//! `QUICK`. So a workspace whose endpoints start hanging is held to its share again within
//! `QUICK` of its first unanswered attempt, and one the process has not heard from is held to it
//! until it answers. What that bounds: the slots a hanging workspace can hold past its share are
//! those it took in the `QUICK` before, and they turn slow (leaving the process's slots) a second
//! after they started.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::ids::WorkspaceId;

/// The workspaces whose endpoints answer quickly, as a worker sees them.
#[derive(Debug, Default)]
pub struct QuickWorkspaces {
    /// Per workspace, until when its last quick answer vouches for it.
    vouched_until: HashMap<WorkspaceId, Instant>,
}

impl QuickWorkspaces {
    /// An answer within this long is quick; an attempt running longer unvouches its workspace.
    pub const QUICK: Duration = Duration::from_millis(100);
    /// How long one quick answer vouches for its workspace.
    pub const VOUCHES_FOR: Duration = Duration::from_secs(1);

    /// An attempt of `workspace` that started at `started` was answered at `now` (any answer,
    /// a failure included: a quick failure frees its slot as fast as a success).
    pub fn answered(&mut self, workspace: WorkspaceId, started: Instant, now: Instant) {
        if now.saturating_duration_since(started) <= Self::QUICK {
            self.vouched_until
                .insert(workspace, now + Self::VOUCHES_FOR);
        }
    }

    /// The workspaces that may go past their share now, given when each attempt still running
    /// started. Forgets the workspaces no answer vouches for any more.
    pub fn unshared(
        &mut self,
        running: impl IntoIterator<Item = (WorkspaceId, Instant)>,
        now: Instant,
    ) -> Vec<WorkspaceId> {
        self.vouched_until.retain(|_, until| *until > now);
        if self.vouched_until.is_empty() {
            return Vec::new();
        }
        let waiting: HashSet<WorkspaceId> = running
            .into_iter()
            .filter(|(_, started)| now.saturating_duration_since(*started) > Self::QUICK)
            .map(|(workspace, _)| workspace)
            .collect();
        let mut unshared: Vec<WorkspaceId> = self
            .vouched_until
            .keys()
            .filter(|workspace| !waiting.contains(workspace))
            .copied()
            .collect();
        unshared.sort_by_key(|ws| ws.0);
        unshared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(n: u128) -> WorkspaceId {
        WorkspaceId(uuid::Uuid::from_u128(n))
    }

    #[test]
    fn a_workspace_not_heard_from_is_held_to_its_share() {
        let mut quick = QuickWorkspaces::default();
        let now = Instant::now();
        assert!(quick.unshared([], now).is_empty());
    }

    #[test]
    fn a_quick_answer_unshares_its_workspace_for_a_second() {
        let mut quick = QuickWorkspaces::default();
        let t0 = Instant::now();
        quick.answered(ws(1), t0, t0 + Duration::from_millis(3));
        assert_eq!(quick.unshared([], t0 + Duration::from_millis(10)), [ws(1)]);
        assert_eq!(quick.unshared([], t0 + Duration::from_millis(900)), [ws(1)]);
        assert!(
            quick
                .unshared([], t0 + Duration::from_millis(1004))
                .is_empty()
        );
    }

    #[test]
    fn a_slow_answer_vouches_for_nothing() {
        let mut quick = QuickWorkspaces::default();
        let t0 = Instant::now();
        quick.answered(ws(1), t0, t0 + Duration::from_millis(150));
        assert!(
            quick
                .unshared([], t0 + Duration::from_millis(151))
                .is_empty()
        );
    }

    #[test]
    fn an_attempt_waiting_past_quick_holds_its_workspace_to_its_share() {
        let mut quick = QuickWorkspaces::default();
        let t0 = Instant::now();
        quick.answered(ws(1), t0, t0 + Duration::from_millis(2));
        quick.answered(ws(2), t0, t0 + Duration::from_millis(2));
        let waiting = t0 + Duration::from_millis(5);
        // Ws 1 has an attempt running for 50 ms: still quick; at 150 ms it is not.
        let at = waiting + Duration::from_millis(50);
        assert_eq!(quick.unshared([(ws(1), waiting)], at), [ws(1), ws(2)]);
        let later = waiting + Duration::from_millis(150);
        assert_eq!(quick.unshared([(ws(1), waiting)], later), [ws(2)]);
        // Once that attempt is answered (slowly), the earlier quick answer vouches again
        // until its second is out.
        assert_eq!(quick.unshared([], later), [ws(1), ws(2)]);
    }
}
