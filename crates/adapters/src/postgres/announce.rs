//! Announcing queued deliveries once the write that queued them has committed.
//!
//! A transaction that calls `pg_notify` takes a lock that is global to the database when it
//! commits, and holds it through its WAL flush: with the notification inside every event's
//! transaction, concurrent writes committed one at a time, never sharing a flush. So the writes
//! only count the deliveries they queue; after the commit, [`DeliveryAnnouncer::announce`] wakes
//! this process's worker at once and asks [`run_notifier`] to tell the other processes, with one
//! `NOTIFY` of its own for all the announcements that arrive while one is on its way.
//!
//! A process that dies between a commit and its announcement leaves the deliveries to the
//! workers' poll (half a second): they are committed, so nothing is lost, only later.
//!
//! The `NOTIFY` carries the announcing process's origin, a random token, and a process's
//! listener ignores its own: its worker was already woken by the announcement itself, and a
//! second wake would only run a claim that finds nothing (one statement more per event at
//! moderate load).
//!
//! Each listener's connection is named after its process (`application_name`
//! `timetrack-listener <origin>`), so operators can tell them apart in `pg_stat_activity`. The
//! `NOTIFY` commits asynchronously: it is a wake-up, and a lost one is caught by the poll.
//!
//! Sending no `NOTIFY` while no other process listens (seen in `pg_stat_activity`) was tried
//! and dropped: a process that starts is seen only at the next look, and meanwhile the others'
//! deliveries all go to the process that wrote them, which then holds every in-flight slot of a
//! subscription; when it is killed, those slots stay taken until its leases expire (a minute's
//! stall in the kill -9 scenario of the fault suite, two runs in six).

use std::sync::Arc;
use std::time::Duration;

use diesel_async::RunQueryDsl;
use tokio::sync::{Notify, watch};

use super::PgPool;
use super::outbox::DELIVERY_CHANNEL;

/// The `application_name` of a listening connection: this, a space, and its process's origin.
pub(crate) const LISTENER_NAME: &str = "timetrack-listener";

/// Wakes the delivery workers of this process and of the others after a commit.
#[derive(Debug, Clone)]
pub struct DeliveryAnnouncer {
    local: Arc<Notify>,
    remote: Arc<Notify>,
    origin: Arc<str>,
}

impl Default for DeliveryAnnouncer {
    fn default() -> Self {
        Self {
            local: Arc::default(),
            remote: Arc::default(),
            origin: uuid::Uuid::new_v4().simple().to_string().into(),
        }
    }
}

impl DeliveryAnnouncer {
    /// A new announcer, its worker wake-up and notifier not yet running.
    pub fn new() -> Self {
        Self::default()
    }

    /// The token this process's notifications carry (hexadecimal), which its own listener
    /// ignores.
    pub fn origin(&self) -> Arc<str> {
        self.origin.clone()
    }

    /// Announces that a committed write queued `queued` deliveries; none, nothing to announce.
    pub fn announce(&self, queued: i64) {
        if queued > 0 {
            self.local.notify_one();
            self.remote.notify_one();
        }
    }

    /// The outcome of a committed conditional write: `Some(queued)` when it found its row (the
    /// deliveries it queued are announced), `None` when the row had changed (nothing written).
    pub(crate) fn outcome(&self, queued: Option<i64>) -> timetrack_domain::ports::WriteOutcome {
        use timetrack_domain::ports::WriteOutcome;
        match queued {
            Some(queued) => {
                self.announce(queued);
                WriteOutcome::Applied
            }
            None => WriteOutcome::Raced,
        }
    }

    /// What this process's delivery worker waits on: [`announce`](Self::announce) and the
    /// notifications of the other processes both wake it.
    pub fn local_wake(&self) -> Arc<Notify> {
        self.local.clone()
    }
}

/// Sends one `NOTIFY` on the delivery channel for every burst of announcements, until
/// `shutdown`. A failed notification is logged and dropped: the other processes' poll finds the
/// deliveries.
pub async fn run_notifier(
    pool: PgPool,
    announcer: DeliveryAnnouncer,
    mut shutdown: watch::Receiver<bool>,
) {
    // The origin is hexadecimal: nothing to quote. Committed asynchronously: a wake-up.
    let notify = format!(
        "SELECT set_config('synchronous_commit', 'off', true), \
                pg_notify('{DELIVERY_CHANNEL}', '{}')",
        announcer.origin
    );
    loop {
        tokio::select! {
            () = announcer.remote.notified() => {}
            _ = shutdown.changed() => return,
        }
        let sent = tokio::time::timeout(Duration::from_secs(2), async {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            diesel::sql_query(&notify)
                .execute(&mut conn)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|_| Err("timed out".to_owned()));
        if let Err(error) = sent {
            tracing::warn!(%error, "notifying other processes of new deliveries failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    #[test]
    fn only_a_write_that_queued_deliveries_wakes_the_worker_and_the_notifier() {
        let announcer = DeliveryAnnouncer::new();
        announcer.announce(0);
        assert!(announcer.local.notified().now_or_never().is_none());
        assert!(announcer.remote.notified().now_or_never().is_none());
        announcer.announce(3);
        assert!(announcer.local_wake().notified().now_or_never().is_some());
        assert!(announcer.remote.notified().now_or_never().is_some());
    }
}
