//! Housekeeping in PostgreSQL: batched deletes of rows past their retention.

use async_trait::async_trait;
use diesel::sql_types::{BigInt, Timestamptz};
use diesel_async::RunQueryDsl;
use time::{Duration, OffsetDateTime};
use timetrack_domain::DomainResult;
use timetrack_domain::ports::{Housekeeping, Purged};

use super::{PgPool, map_db_error, map_pool_error, opaque_debug};

/// Rows deleted per statement, so no pass holds long locks or builds a huge transaction.
const BATCH: i64 = 5000;

const EVENTS: &str = "\
DELETE FROM events WHERE id IN (
    SELECT e.id FROM events e
    WHERE e.created_at < $1
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.status = 'PENDING')
    LIMIT $2
)";
const ATTEMPTS: &str = "\
DELETE FROM delivery_attempts WHERE id IN (
    SELECT id FROM delivery_attempts WHERE started_at < $1 LIMIT $2
)";
const IDEMPOTENCY: &str = "\
DELETE FROM idempotency_keys WHERE (api_key_id, key) IN (
    SELECT api_key_id, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2
)";
const RATE_LIMITS: &str = "\
DELETE FROM rate_limit_hits WHERE id IN (
    SELECT id FROM rate_limit_hits WHERE at < $1 LIMIT $2
)";

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

    /// Runs `statement` in batches until a batch deletes fewer than [`BATCH`] rows.
    async fn drain(&self, statement: &str, cutoff: OffsetDateTime) -> DomainResult<u64> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut total = 0u64;
        loop {
            let deleted = diesel::sql_query(statement)
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
    async fn purge(&self, now: OffsetDateTime, retention: Duration) -> DomainResult<Purged> {
        Ok(Purged {
            events: self.drain(EVENTS, now - retention).await?,
            attempts: self.drain(ATTEMPTS, now - retention).await?,
            idempotency_keys: self.drain(IDEMPOTENCY, now - Duration::hours(24)).await?,
            rate_limit_hits: self.drain(RATE_LIMITS, now - Duration::seconds(60)).await?,
        })
    }
}
