//! The rate-limit stores: the in-process one and the one PostgreSQL shares between
//! instances decide the same sequence of requests the same way.

use std::sync::Arc;

use time::Duration;
use timetrack_adapters::{InMemoryRateLimitStore, PgRateLimitStore};
use timetrack_domain::ports::RateLimitStore;
use timetrack_domain::ratelimit::RatePolicy;
use timetrack_testkit::TestDatabase;

use super::T0;

const POLICY: RatePolicy = RatePolicy {
    per_minute: 5,
    per_second: 2,
};

/// Each step: milliseconds after T0, key, counted (or only peeked), then the expected
/// `allowed` and `remaining`.
async fn decisions(store: Arc<dyn RateLimitStore>) {
    let steps: [(i64, &str, bool, bool, u32); 11] = [
        // A peek is decided like a hit (`remaining` as if admitted) and never counted.
        (0, "a", false, true, 4),
        (0, "a", false, true, 4),
        (0, "a", true, true, 4),
        (100, "a", true, true, 3),
        // Two per rolling second.
        (200, "a", true, false, 3),
        (200, "a", false, false, 3),
        // Another key has its own windows.
        (300, "b", true, true, 4),
        (1_200, "a", true, true, 2),
        (1_300, "a", true, true, 1),
        (2_500, "a", true, true, 0),
        // Five per rolling minute.
        (3_600, "a", true, false, 0),
    ];
    for (ms, key, count, allowed, remaining) in steps {
        let at = T0 + Duration::milliseconds(ms);
        let decision = if count {
            store.hit(key, at, POLICY).await.unwrap()
        } else {
            store.peek(key, at, POLICY).await.unwrap()
        };
        assert_eq!(
            (decision.allowed, decision.remaining),
            (allowed, remaining),
            "{ms} ms, {key}, counted {count}: {decision:?}"
        );
        assert_eq!(decision.limit, 5);
        assert_eq!(
            decision.retry_after_secs.is_some(),
            !allowed,
            "{decision:?}"
        );
    }
    // A minute after the first counted request, its slot is free again.
    let later = store
        .hit("a", T0 + Duration::milliseconds(60_001), POLICY)
        .await
        .unwrap();
    assert!(later.allowed, "{later:?}");
}

#[tokio::test]
async fn in_process_store() {
    decisions(Arc::new(InMemoryRateLimitStore::default())).await;
}

#[tokio::test]
async fn postgres_store() {
    let db = TestDatabase::new().await;
    decisions(Arc::new(PgRateLimitStore::new(db.pool()))).await;
}
