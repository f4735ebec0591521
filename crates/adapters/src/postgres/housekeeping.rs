//! Housekeeping in PostgreSQL: batched deletes of rows past their retention.

use std::sync::LazyLock;

use async_trait::async_trait;
use diesel::sql_types::{BigInt, Timestamptz};
use diesel_async::RunQueryDsl;
use time::{Duration, OffsetDateTime};
use timetrack_domain::DomainResult;
use timetrack_domain::ports::{Housekeeping, Purged, Retention};

use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::sql::numbered;

/// Rows deleted per statement, so no pass holds long locks or builds a huge transaction.
const BATCH: i64 = 5000;

/// A purge statement: deletes at most `batch` rows older than `cutoff`.
#[derive(Clone, Copy)]
enum Purge {
    Events,
    Attempts,
    IdempotencyKeys,
    RateLimitHits,
}

/// The parameters of every purge statement, in the order [`PgHousekeeping::drain`] binds them.
const PURGE_PARAMETERS: [&str; 2] = ["cutoff", "batch"];

impl Purge {
    /// The statement, numbered.
    fn statement(self) -> &'static str {
        static EVENTS: LazyLock<String> = LazyLock::new(|| {
            numbered(
                include_str!("statements/purge_events.sql"),
                &PURGE_PARAMETERS,
            )
        });
        static ATTEMPTS: LazyLock<String> = LazyLock::new(|| {
            numbered(
                include_str!("statements/purge_attempts.sql"),
                &PURGE_PARAMETERS,
            )
        });
        static IDEMPOTENCY_KEYS: LazyLock<String> = LazyLock::new(|| {
            numbered(
                include_str!("statements/purge_idempotency_keys.sql"),
                &PURGE_PARAMETERS,
            )
        });
        static RATE_LIMIT_HITS: LazyLock<String> = LazyLock::new(|| {
            numbered(
                include_str!("statements/purge_rate_limit_hits.sql"),
                &PURGE_PARAMETERS,
            )
        });
        match self {
            Self::Events => &EVENTS,
            Self::Attempts => &ATTEMPTS,
            Self::IdempotencyKeys => &IDEMPOTENCY_KEYS,
            Self::RateLimitHits => &RATE_LIMIT_HITS,
        }
    }
}

/// [`Housekeeping`] on PostgreSQL.
#[derive(Clone)]
pub struct PgHousekeeping {
    pool: PgPool,
}

opaque_debug!(PgHousekeeping);

impl PgHousekeeping {
    /// Housekeeping on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Runs `purge` in batches until a batch deletes fewer than [`BATCH`] rows.
    async fn drain(&self, purge: Purge, cutoff: OffsetDateTime) -> DomainResult<u64> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut total = 0u64;
        loop {
            // As PURGE_PARAMETERS lists them.
            let deleted = diesel::sql_query(purge.statement())
                .bind::<Timestamptz, _>(cutoff)
                .bind::<BigInt, _>(BATCH)
                .execute(&mut conn)
                .await
                .map_err(|e| map_db_error(e, "housekeeping"))?;
            total += deleted as u64;
            if (deleted as i64) < BATCH {
                return Ok(total);
            }
        }
    }
}

#[async_trait]
impl Housekeeping for PgHousekeeping {
    async fn purge(&self, now: OffsetDateTime, retention: Retention) -> DomainResult<Purged> {
        Ok(Purged {
            events: self
                .drain(
                    Purge::Events,
                    now - retention.events.max(retention.deliveries),
                )
                .await?,
            attempts: self
                .drain(Purge::Attempts, now - retention.deliveries)
                .await?,
            idempotency_keys: self
                .drain(Purge::IdempotencyKeys, now - Duration::hours(24))
                .await?,
            rate_limit_hits: self
                .drain(Purge::RateLimitHits, now - Duration::seconds(60))
                .await?,
        })
    }
}
