//! Idempotency keys: claimed once per API key, replayed with the same request once completed,
//! refused with another, forgotten after their retention or an abandoned claim.

use super::*;
use crate::subscriptions::stored_key;
use timetrack_domain::ports::{IDEMPOTENCY_RETENTION, IdempotencyBegin, STALE_CLAIM};

contract!(idempotency_keys_are_claimed_once_replayed_and_forgotten_in_time);

async fn idempotency_keys_are_claimed_once_replayed_and_forgotten_in_time(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let other_key = stored_key(&s, 51, &ws, &member).await;
    let (same, other) = ([1u8; 32], [2u8; 32]);
    let begin = |api_key: ApiKeyId, name: &'static str, fingerprint: [u8; 32], at| {
        let store = s.idempotency.clone();
        async move {
            store
                .begin(ws.id, api_key, name, fingerprint, at)
                .await
                .unwrap()
        }
    };

    assert_eq!(
        begin(key.id, "k", same, T0).await,
        IdempotencyBegin::Started
    );
    assert_eq!(
        begin(key.id, "k", same, T0).await,
        IdempotencyBegin::InProgress
    );
    assert_eq!(
        begin(key.id, "k", other, T0).await,
        IdempotencyBegin::Mismatch
    );
    // Keys are per API key.
    assert_eq!(
        begin(other_key.id, "k", other, T0).await,
        IdempotencyBegin::Started
    );

    s.idempotency
        .complete(key.id, "k", 201, r#"{"id":1}"#)
        .await
        .unwrap();
    let replay = IdempotencyBegin::Replay {
        status: 201,
        body: r#"{"id":1}"#.into(),
    };
    let later = T0 + Duration::hours(1);
    assert_eq!(begin(key.id, "k", same, later).await, replay);
    assert_eq!(
        begin(key.id, "k", other, later).await,
        IdempotencyBegin::Mismatch
    );
    // A completed key is not abandoned.
    s.idempotency.abandon(key.id, "k").await.unwrap();
    assert_eq!(begin(key.id, "k", same, later).await, replay);
    // Forgotten once its retention has passed.
    let gone = T0 + IDEMPOTENCY_RETENTION + Duration::seconds(1);
    assert_eq!(
        begin(key.id, "k", other, gone).await,
        IdempotencyBegin::Started
    );

    // An abandoned claim is free again at once; a claim never completed, after a while.
    assert_eq!(
        begin(key.id, "a", same, T0).await,
        IdempotencyBegin::Started
    );
    s.idempotency.abandon(key.id, "a").await.unwrap();
    assert_eq!(
        begin(key.id, "a", other, T0).await,
        IdempotencyBegin::Started
    );
    let stale = T0 + STALE_CLAIM + Duration::seconds(1);
    assert_eq!(
        begin(key.id, "a", same, stale).await,
        IdempotencyBegin::Started
    );
}
