//! Reads from a replica: how far behind the primary it is, and the positions of commits.
//!
//! A [`ReplicaWatch`] samples, a few times a second, the primary's WAL position and the position
//! the replica has replayed. Whatever the primary had written when a sample was taken is on the
//! replica once its replayed position reaches the sample's, so the replica's lag is at most the
//! age of the newest primary sample it has reached. The API sends a read that tolerates lag to
//! the replica only while that bound is within `--replica-max-lag`, and, for a caller who wrote
//! shortly before, only once the replica has replayed the caller's last commit
//! ([`commit_position`], sent back as `X-Commit-Position`).

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl as _;
use timetrack_domain::DomainResult;
use tokio::sync::watch;

use super::errors::{map_db_error, map_pool_error};
use super::pool::PgPool;

/// How often the watch samples the primary and the replica. A caller's read after its write
/// waits for the replica's next sample past the write, so this is also about the longest a
/// replica keeps such a read on the primary once it has caught up.
pub const REPLICA_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// A position in the write-ahead log (PostgreSQL's `pg_lsn`), shown as PostgreSQL shows it:
/// `16/B374D848`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommitPosition(pub u64);

impl fmt::Display for CommitPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

/// The text is not a WAL position (`<hex>/<hex>`, each part at most 8 digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAPosition;

impl FromStr for CommitPosition {
    type Err = NotAPosition;

    fn from_str(text: &str) -> Result<Self, NotAPosition> {
        let (high, low) = text.split_once('/').ok_or(NotAPosition)?;
        let part = |p: &str| {
            if p.is_empty() || p.len() > 8 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(NotAPosition);
            }
            u64::from_str_radix(p, 16).map_err(|_| NotAPosition)
        };
        Ok(Self((part(high)? << 32) | part(low)?))
    }
}

#[derive(QueryableByName)]
struct Position {
    #[diesel(sql_type = Text)]
    position: String,
}

async fn position_of(pool: &PgPool, sql: &'static str) -> DomainResult<CommitPosition> {
    let mut conn = pool.get().await.map_err(map_pool_error)?;
    let row: Position = diesel::sql_query(sql)
        .get_result(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading a WAL position"))?;
    row.position.parse().map_err(|_| {
        timetrack_domain::DomainError::Unexpected(anyhow::anyhow!(
            "PostgreSQL answered {:?} for a WAL position",
            row.position
        ))
    })
}

/// The primary's WAL insert position, read after a write committed: at or past the write's
/// commit record, so a replica that has replayed it shows the write.
pub async fn commit_position(primary: &PgPool) -> DomainResult<CommitPosition> {
    position_of(
        primary,
        "SELECT pg_current_wal_insert_lsn()::text AS position",
    )
    .await
}

/// What the watch last learnt.
#[derive(Debug, Default)]
struct Seen {
    /// The primary's written WAL position, oldest first, over the last `max_lag` and a little.
    primary: VecDeque<(Instant, CommitPosition)>,
    /// The replica's replayed position and when it was read; `None` while it cannot be read.
    replica: Option<(Instant, CommitPosition)>,
    /// Whether the primary answered the last sample.
    primary_answers: bool,
}

/// How far a replica is behind its primary, shared by every pool of a process (cheap to clone).
#[derive(Clone)]
pub struct ReplicaWatch {
    max_lag: Duration,
    seen: Arc<Mutex<Seen>>,
}

impl fmt::Debug for ReplicaWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplicaWatch")
            .field("max_lag", &self.max_lag)
            .finish_non_exhaustive()
    }
}

impl ReplicaWatch {
    /// A watch that lets reads use the replica while it is at most `max_lag` behind. It knows
    /// nothing (and lets no read use the replica) until [`ReplicaWatch::run`] has sampled both.
    pub fn new(max_lag: Duration) -> Self {
        Self {
            max_lag,
            seen: Arc::new(Mutex::new(Seen::default())),
        }
    }

    /// The bound reads were given.
    pub fn max_lag(&self) -> Duration {
        self.max_lag
    }

    /// Whether a read may be served by the replica now: it answers, it is at most `max_lag`
    /// behind the primary, and it has replayed `at_least` (the caller's last commit) when given.
    ///
    /// While the primary does not answer, its lag cannot be measured and nothing newer can be
    /// read anywhere: the replica serves reads as [`ReplicaWatch::serves_without_primary`] says.
    pub fn serves(&self, at_least: Option<CommitPosition>) -> bool {
        let now = Instant::now();
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((read_at, replayed)) = seen.replica else {
            return false;
        };
        if at_least.is_some_and(|needed| replayed < needed) {
            return false;
        }
        if now.duration_since(read_at) > self.max_lag {
            return false;
        }
        if !seen.primary_answers {
            return true;
        }
        // The newest primary sample the replica has reached: everything the primary had written
        // then, the replica has.
        let Some(&(reached_at, _)) = seen
            .primary
            .iter()
            .rev()
            .find(|(_, position)| *position <= replayed)
        else {
            return false;
        };
        now.duration_since(reached_at) <= self.max_lag
    }

    /// Whether the replica may answer a read the primary could not (it is away): the replica
    /// answered its last sample (within `max_lag`) and has replayed `at_least`. Whatever its
    /// lag, it holds the newest data that can be read now: with asynchronous replication the
    /// primary's last transactions may never reach it.
    pub fn serves_without_primary(&self, at_least: Option<CommitPosition>) -> bool {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.replica.is_some_and(|(read_at, replayed)| {
            read_at.elapsed() <= self.max_lag && at_least.is_none_or(|needed| replayed >= needed)
        })
    }

    /// Whether the primary answered the last sample; a caller may then prefer the replica for
    /// what it can answer instead of waiting for the primary's connect time-out.
    pub fn primary_answers(&self) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .primary_answers
    }

    fn note_primary(&self, at: Instant, position: Option<CommitPosition>) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.primary_answers = position.is_some();
        if let Some(position) = position {
            seen.primary.push_back((at, position));
        }
        // Keep what can still show a lag within the bound, and always the newest sample.
        let keep = self.max_lag + Duration::from_secs(1);
        while seen.primary.len() > 1
            && seen
                .primary
                .front()
                .is_some_and(|(t, _)| at.duration_since(*t) > keep)
        {
            seen.primary.pop_front();
        }
    }

    fn note_replica(&self, at: Instant, position: Option<CommitPosition>) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.replica = position.map(|p| (at, p));
    }

    /// Samples both every [`REPLICA_SAMPLE_EVERY`] until `shutdown` turns true. The replica is
    /// read first, so that a primary sample is never newer than the replica's reading it is
    /// compared with in the same round.
    pub async fn run(self, primary: PgPool, replica: PgPool, mut shutdown: watch::Receiver<bool>) {
        // Logged when the replica stops or starts answering, not on every failed sample.
        let mut answering = true;
        let mut tick = tokio::time::interval(REPLICA_SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.changed() => return,
            }
            if *shutdown.borrow() {
                return;
            }
            let bound = self.max_lag.max(Duration::from_secs(1));
            let replica_at = Instant::now();
            let replayed = tokio::time::timeout(bound, replayed_position(&replica)).await;
            let replayed = match replayed {
                Ok(Ok(position)) => {
                    if !answering {
                        tracing::info!("the replica answers again; reads may use it");
                    }
                    answering = true;
                    Some(position)
                }
                failed => {
                    if answering {
                        let error = match failed {
                            Ok(Err(err)) => err.to_string(),
                            _ => format!("no answer within {} ms", bound.as_millis()),
                        };
                        tracing::warn!(%error, "the replica cannot be read; reads use the primary");
                    }
                    answering = false;
                    None
                }
            };
            self.note_replica(replica_at, replayed);
            let primary_at = Instant::now();
            let written = tokio::time::timeout(bound, written_position(&primary)).await;
            self.note_primary(primary_at, written.ok().and_then(Result::ok));
        }
    }
}

/// The primary's written WAL position (what it can send to replicas).
async fn written_position(primary: &PgPool) -> DomainResult<CommitPosition> {
    position_of(primary, "SELECT pg_current_wal_lsn()::text AS position").await
}

/// What the replica has replayed; a server that is no longer in recovery (the replica was
/// promoted) has everything it wrote.
async fn replayed_position(replica: &PgPool) -> DomainResult<CommitPosition> {
    position_of(
        replica,
        "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() \
         ELSE pg_current_wal_insert_lsn() END)::text AS position",
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_reads_and_shows_as_postgresql_shows_it() {
        let position: CommitPosition = "16/B374D848".parse().unwrap();
        assert_eq!(position.0, (0x16 << 32) | 0xB374_D848);
        assert_eq!(position.to_string(), "16/B374D848");
        assert_eq!("0/0".parse::<CommitPosition>().unwrap().0, 0);
        for bad in [
            "",
            "16",
            "/1",
            "1/",
            "1/2/3",
            "g/1",
            "123456789/0",
            " 1/2",
            "+1/2",
        ] {
            assert_eq!(bad.parse::<CommitPosition>(), Err(NotAPosition), "{bad:?}");
        }
    }

    fn watch_with(
        max_lag: Duration,
        primary: &[(Duration, u64)],
        replica: Option<(Duration, u64)>,
        primary_answers: bool,
    ) -> ReplicaWatch {
        let watch = ReplicaWatch::new(max_lag);
        let now = Instant::now();
        {
            let mut seen = watch.seen.lock().unwrap();
            seen.primary = primary
                .iter()
                .map(|(ago, p)| (now - *ago, CommitPosition(*p)))
                .collect();
            seen.replica = replica.map(|(ago, p)| (now - ago, CommitPosition(p)));
            seen.primary_answers = primary_answers;
        }
        watch
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn a_replica_that_has_the_newest_sample_serves() {
        let watch = watch_with(
            MS(5000),
            &[(MS(300), 10), (MS(100), 20)],
            Some((MS(50), 20)),
            true,
        );
        assert!(watch.serves(None));
        assert!(watch.serves(Some(CommitPosition(20))));
        assert!(
            !watch.serves(Some(CommitPosition(21))),
            "not yet at the caller's commit"
        );
    }

    #[test]
    fn a_replica_behind_the_bound_does_not_serve() {
        // It has replayed what the primary had 6 s ago, not what it had 4 s ago.
        let watch = watch_with(
            MS(5000),
            &[(MS(6000), 10), (MS(4000), 20), (MS(100), 30)],
            Some((MS(50), 15)),
            true,
        );
        assert!(!watch.serves(None));
        let within = watch_with(
            MS(5000),
            &[(MS(6000), 10), (MS(4000), 20), (MS(100), 30)],
            Some((MS(50), 25)),
            true,
        );
        assert!(within.serves(None), "4 s behind, within 5 s");
    }

    #[test]
    fn a_replica_behind_every_sample_or_unread_does_not_serve() {
        assert!(!watch_with(MS(5000), &[(MS(100), 30)], Some((MS(50), 29)), true).serves(None));
        assert!(!watch_with(MS(5000), &[(MS(100), 30)], None, true).serves(None));
        assert!(!watch_with(MS(5000), &[], Some((MS(50), 29)), true).serves(None));
        assert!(
            !ReplicaWatch::new(MS(5000)).serves(None),
            "nothing sampled yet"
        );
    }

    #[test]
    fn while_the_primary_is_away_the_replica_serves_whatever_it_has() {
        let away = watch_with(MS(2000), &[(MS(9000), 30)], Some((MS(50), 30)), false);
        assert!(away.serves(None));
        // The primary's last WAL never reached it (asynchronous replication): still the newest
        // data there is.
        let behind = watch_with(MS(2000), &[(MS(9000), 30)], Some((MS(50), 29)), false);
        assert!(behind.serves(None));
        assert!(behind.serves_without_primary(None));
        assert!(
            !behind.serves(Some(CommitPosition(30))),
            "not the caller's own write"
        );
        let unread = watch_with(MS(2000), &[(MS(9000), 30)], Some((MS(3000), 30)), false);
        assert!(!unread.serves(None), "a replica that stopped answering");
        let answering = watch_with(MS(2000), &[(MS(9000), 30)], Some((MS(50), 30)), true);
        assert!(
            !answering.serves(None),
            "a primary sample 9 s old shows nothing about now"
        );
    }

    #[test]
    fn old_samples_are_let_go_but_the_newest_is_kept() {
        let watch = ReplicaWatch::new(MS(1000));
        let start = Instant::now();
        for i in 0..50u64 {
            watch.note_primary(start + MS(i * 100), Some(CommitPosition(i)));
        }
        let kept = watch.seen.lock().unwrap().primary.len();
        assert!((20..=22).contains(&kept), "{kept} samples kept");
        watch.note_primary(start + MS(60_000), None);
        assert_eq!(watch.seen.lock().unwrap().primary.len(), 1);
    }
}
