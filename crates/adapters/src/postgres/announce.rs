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
//! A process alone on its database sends no `NOTIFY`: nobody would hear it, and at moderate
//! load it was a transaction per write, plus the wake-up of the listening connection's server
//! process, for nothing (about half a millisecond of the machine's CPU per event at 200
//! events/s, S = 1). The notifier knows whether another process listens in two ways:
//!
//! * it looks, at most once a second while announcements come, for another process's listening
//!   connection in `pg_stat_activity`: each listener's connection is named after its process
//!   (`application_name` `timetrack-listener <origin>`, shown to every role), which also lets
//!   operators tell them apart;
//! * a listener that starts listening says so at once with a `NOTIFY` of its own origin, and the
//!   listeners of the other processes pass it on to their notifiers
//!   ([`DeliveryAnnouncer::heard_another`]).
//!
//! The second is what makes it safe. Seen only at the next look, a process that starts (or
//! restarts after a crash) would get no notifications for up to a second while the writers'
//! own workers took every in-flight slot of the subscriptions they wrote for, and a writer killed
//! then would leave those slots taken until its leases expired. With the listener's own
//! notification, the others notify it from its first moment, as if they always sent.
//!
//! A process that stops is still counted until the next look: a second of notifications nobody
//! hears. A `NOTIFY` commits asynchronously: it is a wake-up, and a lost one is caught by the
//! poll.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use tokio::sync::{Notify, watch};

use super::outbox::DELIVERY_CHANNEL;
use super::pool::PgPool;

/// The `application_name` of a listening connection: this, a space, and its process's origin.
pub(crate) const LISTENER_NAME: &str = "timetrack-listener";

/// Wakes the delivery workers of this process and of the others after a commit.
#[derive(Debug, Clone)]
pub struct DeliveryAnnouncer {
    local: Arc<Notify>,
    remote: Arc<Notify>,
    origin: Arc<str>,
    /// When this process's listener last heard another process.
    heard: Arc<Mutex<Option<Instant>>>,
}

impl Default for DeliveryAnnouncer {
    fn default() -> Self {
        Self {
            local: Arc::default(),
            remote: Arc::default(),
            origin: uuid::Uuid::new_v4().simple().to_string().into(),
            heard: Arc::default(),
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

    /// This process's listener heard another process's notification: another process listens,
    /// and the notifier sends for it (see the module's documentation).
    pub fn heard_another(&self) {
        *self
            .heard
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
    }

    /// Whether this process's listener heard another process within `within`.
    fn heard_another_within(&self, within: Duration) -> bool {
        self.heard
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|at| at.elapsed() < within)
    }

    /// The `application_name` of this process's listening connection.
    pub fn listener_name(&self) -> String {
        format!("{LISTENER_NAME} {}", self.origin)
    }

    /// What this process's delivery worker waits on: [`announce`](Self::announce) and the
    /// notifications of the other processes both wake it.
    pub fn local_wake(&self) -> Arc<Notify> {
        self.local.clone()
    }
}

/// How often the notifier looks again whether another process listens, in production.
pub const LOOK_FOR_LISTENERS_EVERY: Duration = Duration::from_secs(1);

/// Sends one `NOTIFY` on the delivery channel for every burst of announcements while another
/// process listens (looked for in `pg_stat_activity` at most once per `look_every`, or heard by
/// this process's listener within twice that), until `shutdown`. A failed notification is logged
/// and dropped: the other processes' poll finds the deliveries.
pub async fn run_notifier(
    pool: PgPool,
    announcer: DeliveryAnnouncer,
    look_every: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    // The origin is hexadecimal: nothing to quote. Committed asynchronously: a wake-up.
    let notify = format!(
        "SELECT set_config('synchronous_commit', 'off', true), \
                pg_notify('{DELIVERY_CHANNEL}', '{}')",
        announcer.origin
    );
    let others = format!(
        "SELECT count(*) AS n FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name LIKE '{LISTENER_NAME} %' \
           AND application_name <> '{}'",
        announcer.listener_name()
    );
    // Whether another process listened when last looked, and when that was.
    let mut seen: Option<(bool, Instant)> = None;
    let failures = crate::LogThrottle::new();
    loop {
        tokio::select! {
            () = announcer.remote.notified() => {}
            _ = shutdown.changed() => return,
        }
        let sent = tokio::time::timeout(Duration::from_secs(2), async {
            // Heard within two looks: a look that began just before the other process's
            // listener said so may not have seen it.
            let heard = announcer.heard_another_within(look_every * 2);
            let looked = seen.filter(|(_, at)| at.elapsed() < look_every);
            if !heard && looked.is_some_and(|(listening, _)| !listening) {
                return Ok(());
            }
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            let listening = match looked {
                Some((listening, _)) => listening,
                None => {
                    let count: Count = diesel::sql_query(&others)
                        .get_result(&mut conn)
                        .await
                        .map_err(|e| e.to_string())?;
                    seen = Some((count.n > 0, Instant::now()));
                    count.n > 0
                }
            };
            if listening || heard {
                diesel::sql_query(&notify)
                    .execute(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok::<_, String>(())
        })
        .await
        .unwrap_or_else(|_| Err("timed out".to_owned()));
        if let Err(error) = sent
            && let Some(unlogged) = failures.admit()
        {
            tracing::warn!(
                %error,
                unlogged_since_last = unlogged,
                "notifying other processes of new deliveries failed"
            );
        }
    }
}

/// A count.
#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
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
