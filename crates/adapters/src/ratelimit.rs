//! Rate-limit stores: exact sliding windows in the process, or in PostgreSQL for several instances.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::DomainResult;
use timetrack_domain::ports::RateLimitStore;
use timetrack_domain::ratelimit::{MINUTE, RateDecision, RatePolicy, decide};

use crate::postgres::schema::rate_limit_hits;
use crate::postgres::{PgPool, map_db_error, map_pool_error, opaque_debug};

/// Keys kept before idle ones are swept.
const SWEEP_AT: usize = 10_000;

/// Counts in this process: exact, fast, and per instance.
#[derive(Debug, Default)]
pub struct InMemoryRateLimitStore {
    hits: Mutex<HashMap<String, VecDeque<OffsetDateTime>>>,
}

#[async_trait]
impl RateLimitStore for InMemoryRateLimitStore {
    async fn hit(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: RatePolicy,
    ) -> DomainResult<RateDecision> {
        let mut hits = self
            .hits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if hits.len() >= SWEEP_AT {
            hits.retain(|_, times| times.back().is_some_and(|t| *t > now - MINUTE));
        }
        let times = hits.entry(key.to_owned()).or_default();
        while times.front().is_some_and(|t| *t <= now - MINUTE) {
            times.pop_front();
        }
        let decision = decide(times.make_contiguous(), now, policy);
        if decision.allowed {
            times.push_back(now);
        }
        Ok(decision)
    }

    async fn peek(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: RatePolicy,
    ) -> DomainResult<RateDecision> {
        let hits = self
            .hits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let recent: Vec<OffsetDateTime> = hits
            .get(key)
            .map(|times| {
                times
                    .iter()
                    .copied()
                    .filter(|t| *t > now - MINUTE)
                    .collect()
            })
            .unwrap_or_default();
        Ok(decide(&recent, now, policy))
    }
}

/// Counts in PostgreSQL, shared by every instance on the database. Each check takes a
/// transaction-scoped advisory lock on the key, so concurrent instances decide one at a time.
#[derive(Clone)]
pub struct PgRateLimitStore {
    pool: PgPool,
}

opaque_debug!(PgRateLimitStore);

impl PgRateLimitStore {
    /// The store on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl RateLimitStore for PgRateLimitStore {
    async fn hit(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: RatePolicy,
    ) -> DomainResult<RateDecision> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let key = key.to_owned();
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind::<diesel::sql_types::Text, _>(&key)
                .execute(conn)
                .await?;
            diesel::delete(
                rate_limit_hits::table
                    .filter(rate_limit_hits::key.eq(&key))
                    .filter(rate_limit_hits::at.le(now - MINUTE)),
            )
            .execute(conn)
            .await?;
            let recent: Vec<OffsetDateTime> = rate_limit_hits::table
                .filter(rate_limit_hits::key.eq(&key))
                .order(rate_limit_hits::at.asc())
                .select(rate_limit_hits::at)
                .load(conn)
                .await?;
            let decision = decide(&recent, now, policy);
            if decision.allowed {
                diesel::insert_into(rate_limit_hits::table)
                    .values((rate_limit_hits::key.eq(&key), rate_limit_hits::at.eq(now)))
                    .execute(conn)
                    .await?;
            }
            Ok(decision)
        })
        .await
        .map_err(|e| map_db_error(e, "checking a rate limit"))
    }

    async fn peek(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: RatePolicy,
    ) -> DomainResult<RateDecision> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let recent: Vec<OffsetDateTime> = rate_limit_hits::table
            .filter(rate_limit_hits::key.eq(key))
            .filter(rate_limit_hits::at.gt(now - MINUTE))
            .order(rate_limit_hits::at.asc())
            .select(rate_limit_hits::at)
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "reading a rate limit"))?;
        Ok(decide(&recent, now, policy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;
    use time::macros::datetime;

    #[tokio::test]
    async fn the_in_memory_store_counts_per_key() {
        let store = InMemoryRateLimitStore::default();
        let policy = RatePolicy {
            per_minute: 3,
            per_second: 2,
        };
        let t0 = datetime!(2026-01-05 09:00 UTC);
        assert!(store.hit("a", t0, policy).await.unwrap().allowed);
        assert!(store.hit("a", t0, policy).await.unwrap().allowed);
        assert!(!store.hit("a", t0, policy).await.unwrap().allowed);
        assert!(store.hit("b", t0, policy).await.unwrap().allowed);
        let t1 = t0 + Duration::seconds(1);
        assert!(store.hit("a", t1, policy).await.unwrap().allowed);
        assert!(
            !store.hit("a", t1, policy).await.unwrap().allowed,
            "3 per minute"
        );
        assert!(store.hit("a", t0 + MINUTE, policy).await.unwrap().allowed);
    }

    #[tokio::test]
    async fn a_peek_decides_as_a_hit_would_and_counts_nothing() {
        let store = InMemoryRateLimitStore::default();
        let policy = RatePolicy {
            per_minute: 2,
            per_second: 10,
        };
        let t0 = datetime!(2026-01-05 09:00 UTC);
        for _ in 0..5 {
            assert!(store.peek("a", t0, policy).await.unwrap().allowed);
        }
        assert!(store.hit("a", t0, policy).await.unwrap().allowed);
        assert!(store.hit("a", t0, policy).await.unwrap().allowed);
        let peeked = store.peek("a", t0, policy).await.unwrap();
        assert_eq!(peeked, store.hit("a", t0, policy).await.unwrap());
        assert!(!peeked.allowed);
        assert!(store.peek("a", t0 + MINUTE, policy).await.unwrap().allowed);
    }
}
