//! Claims of several processes at once (ADR 0019): four queues, each with its own pool (its own
//! sessions, as four processes have), record and claim concurrently until every delivery is
//! made. No delivery is claimed twice, no subscription ever has more than its cap in flight, and
//! each ordering key's deliveries go one at a time, in sequence.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use rand::Rng as _;
use time::Duration;
use timetrack_adapters::postgres::PgDeliveryQueue;
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, ClaimWhen, ClaimedDelivery, InFlightCaps, NextStep,
};
use timetrack_domain::ports::DeliveryQueue;
use timetrack_testkit::TestDatabase;

use super::{ACCOUNT, T0, record, sql, text};

const SUBSCRIPTIONS: u32 = 6;
const EVENTS: u32 = 60;
const KEYS: u32 = 8;
const CAP: u32 = 4;
const PROCESSES: usize = 4;

/// What the claims have handed out, as the processes see it: checked at every claim.
#[derive(Default)]
struct Ledger {
    /// Every delivery ever claimed (each is delivered at its first attempt).
    claimed: HashSet<i64>,
    /// In flight per subscription.
    in_flight: HashMap<String, u32>,
    /// In flight per subscription and ordering key.
    keys_in_flight: HashSet<(String, String)>,
    /// The sequences of each subscription's key not yet delivered, lowest first.
    waiting: HashMap<(String, String), VecDeque<i64>>,
    delivered: u32,
}

impl Ledger {
    fn take(&mut self, claimed: &[ClaimedDelivery]) {
        for c in claimed {
            let sub = c.subscription_id.to_string();
            let key = (sub.clone(), c.ordering_key.clone());
            assert!(
                self.claimed.insert(c.delivery_id.0),
                "delivery {} claimed twice",
                c.delivery_id.0
            );
            let n = self.in_flight.entry(sub.clone()).or_default();
            *n += 1;
            assert!(*n <= CAP, "{sub} has {n} in flight, over its cap of {CAP}");
            assert!(
                self.keys_in_flight.insert(key.clone()),
                "two deliveries of {key:?} in flight at once"
            );
            let next = self.waiting.get(&key).and_then(|q| q.front().copied());
            assert_eq!(
                next,
                Some(c.sequence),
                "{key:?}: sequence {} claimed before {next:?}",
                c.sequence
            );
        }
    }

    /// Before the round that records `done` as delivered: they leave the ledger (a claim can
    /// only see them gone once that round commits, so the ledger never counts less than the
    /// database holds).
    fn release(&mut self, done: &[(ClaimedDelivery, AttemptRecord)]) {
        for (c, _) in done {
            let sub = c.subscription_id.to_string();
            let key = (sub.clone(), c.ordering_key.clone());
            *self.in_flight.get_mut(&sub).expect("in flight") -= 1;
            self.keys_in_flight.remove(&key);
            self.waiting.get_mut(&key).expect("waiting").pop_front();
        }
    }
}

#[tokio::test]
async fn four_processes_claim_at_once_and_the_caps_order_and_leases_hold() {
    let db = TestDatabase::new().await;
    for statement in ACCOUNT {
        sql(&db, statement).await;
    }
    for statement in [
        format!(
            "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at) SELECT 'wh_' || repeat(chr(96 + n), 24), '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://' || n || '.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'ACTIVE', now(), now() FROM generate_series(1, {SUBSCRIPTIONS}) n"
        ),
        format!(
            "INSERT INTO events (id, workspace_id, event_type, body, created_at) SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000a1', 'CLIENT_CREATED', '{{\"n\":' || g || '}}', '{T0}' FROM generate_series(1, {EVENTS}) g"
        ),
        // Each event's key is one of KEYS entities; its sequence is its number.
        format!(
            "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at, created_at, updated_at, ordering_key, sequence) SELECT e.id, s.id, e.workspace_id, 'PENDING', '{T0}', '{T0}', '{T0}', 'k' || (e.seq % {KEYS}), e.seq FROM events e CROSS JOIN webhook_subscriptions s"
        ),
    ] {
        sql(&db, &statement).await;
    }
    let total = SUBSCRIPTIONS * EVENTS;
    let mut ledger = Ledger::default();
    let rows = text(
        &db,
        "SELECT subscription_id || ' ' || ordering_key || ' ' || sequence AS v FROM deliveries ORDER BY sequence",
    )
    .await;
    for row in rows.split(',') {
        let [sub, key, seq] = row.split(' ').collect::<Vec<_>>()[..] else {
            panic!("{row}")
        };
        ledger
            .waiting
            .entry((sub.to_owned(), key.to_owned()))
            .or_default()
            .push_back(seq.parse().unwrap());
    }
    let ledger = Arc::new(Mutex::new(ledger));

    let mut processes = Vec::new();
    for _ in 0..PROCESSES {
        let queue = PgDeliveryQueue::new(db.pool(), timetrack_adapters::SecretBox::ephemeral());
        let ledger = ledger.clone();
        processes.push(tokio::spawn(async move {
            let mut done: Vec<(ClaimedDelivery, AttemptRecord)> = Vec::new();
            let mut rounds = 0u32;
            loop {
                rounds += 1;
                assert!(rounds < 20_000, "the deliveries were not all made");
                ledger.lock().unwrap().release(&done);
                let limit = rand::rng().random_range(1..=12);
                let claimed = queue
                    .record_and_claim(
                        &done,
                        T0 + Duration::seconds(1),
                        T0 + Duration::minutes(10),
                        limit,
                        &InFlightCaps::per_subscription(CAP),
                        ClaimWhen::Always,
                    )
                    .await
                    .unwrap();
                let recorded = u32::try_from(done.len()).unwrap();
                let delivered = {
                    let mut ledger = ledger.lock().unwrap();
                    ledger.delivered += recorded;
                    ledger.take(&claimed);
                    ledger.delivered
                };
                if claimed.is_empty() {
                    if delivered == total {
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
                // The attempts take a moment, as sends do.
                let hold = rand::rng().random_range(0..3);
                tokio::time::sleep(std::time::Duration::from_millis(hold)).await;
                done = claimed
                    .into_iter()
                    .map(|c| {
                        (
                            c,
                            record(NextStep::Done, AttemptOutcome::Delivered { status: 200 }),
                        )
                    })
                    .collect();
            }
        }));
    }
    for process in processes {
        process.await.unwrap();
    }
    assert_eq!(ledger.lock().unwrap().claimed.len(), total as usize);
    assert_eq!(
        text(
            &db,
            "SELECT status || ' ' || count(*) AS v FROM deliveries GROUP BY status"
        )
        .await,
        format!("DELIVERED {total}")
    );
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM delivery_leases").await,
        "0"
    );
}
