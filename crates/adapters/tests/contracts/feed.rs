//! The catch-up feed: oldest first after a position, newest first before one, by type, within
//! the workspace, and an event about a webhook shown to its owner alone.

use super::*;
use crate::subscriptions::{stored_key, subscription};
use timetrack_domain::model::{FeedEvent, FeedPosition};

contract!(the_feed_reads_a_workspaces_events_in_order_both_ways_and_withholds_others);

fn ids_of(events: &[FeedEvent]) -> Vec<EventId> {
    events.iter().map(|e| e.id).collect()
}

/// Waits until `viewer` reads `n` events of `types` from the start: the feed holds an event back
/// while any older transaction of the cluster runs (another test's, here), so a read made just
/// after a write may not show it yet.
async fn settled(s: &Subject, ws: WorkspaceId, viewer: UserId, types: &[EventType], n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let read = s
            .feed
            .read(ws, viewer, FeedPosition::default(), types, 100)
            .await
            .unwrap();
        if read.events.len() >= n || std::time::Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn the_feed_reads_a_workspaces_events_in_order_both_ways_and_withholds_others(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other_ws, other_member) = seeded(&s, 2).await;
    let colleague = user(2003, "colleague@example.com");
    s.users
        .create_member(&colleague, ws.id, Role::Member, T0)
        .await
        .unwrap();
    // Three clients of this workspace, one write each, and one of another workspace between.
    let mut written = Vec::new();
    for n in 0..3u128 {
        let made = event(900 + n, ws.id, EventType::ClientCreated, n as i64);
        s.clients
            .create(
                &client(100 + n, &ws, &format!("C{n}"), n as i64),
                std::slice::from_ref(&made),
            )
            .await
            .unwrap();
        written.push(made.id);
        let theirs = event(950 + n, other_ws.id, EventType::ClientCreated, n as i64);
        s.clients
            .create(
                &client(150 + n, &other_ws, &format!("C{n}"), n as i64),
                &[theirs],
            )
            .await
            .unwrap();
    }
    let created = [EventType::ClientCreated];
    let start = FeedPosition::default();
    settled(&s, ws.id, member.id, &created, 3).await;
    settled(&s, other_ws.id, other_member.id, &created, 3).await;

    // Forwards, a page at a time: oldest first, each page after the last one's position.
    let first = s
        .feed
        .read(ws.id, member.id, start, &created, 2)
        .await
        .unwrap();
    assert_eq!(ids_of(&first.events), written[..2]);
    assert!(first.events[0].position < first.events[1].position);
    assert_eq!(first.events[0].body, r#"{"n":900}"#);
    let last_shown = first.events[1].position;
    let second = s
        .feed
        .read(ws.id, member.id, last_shown, &created, 2)
        .await
        .unwrap();
    assert_eq!(ids_of(&second.events), written[2..]);
    assert!(
        second.horizon > second.events[0].position,
        "every event shown is below the horizon"
    );
    let end = s
        .feed
        .read(ws.id, member.id, second.events[0].position, &created, 2)
        .await
        .unwrap();
    assert!(end.events.is_empty());
    assert!(end.horizon >= second.horizon);

    // Another type, or another workspace's reader, sees none of them.
    let updated = [EventType::ClientUpdated];
    let none = s
        .feed
        .read(ws.id, member.id, start, &updated, 10)
        .await
        .unwrap();
    assert!(none.events.is_empty());
    let theirs = s
        .feed
        .read(other_ws.id, other_member.id, start, &created, 10)
        .await
        .unwrap();
    assert_eq!(theirs.events.len(), 3);
    assert!(theirs.events.iter().all(|e| !written.contains(&e.id)));

    // Backwards: newest first, before a position.
    let latest = FeedPosition {
        txid: i64::MAX,
        seq: i64::MAX,
    };
    let back = s
        .feed
        .read_back(ws.id, member.id, latest, &created, 2)
        .await
        .unwrap();
    assert_eq!(ids_of(&back), [written[2], written[1]]);
    let further = s
        .feed
        .read_back(ws.id, member.id, back[1].position, &created, 2)
        .await
        .unwrap();
    assert_eq!(ids_of(&further), [written[0]]);

    // An event about a webhook (here a test delivery's) shows to the webhook's owner alone.
    let key = stored_key(&s, 60, &ws, &member).await;
    let hook = subscription(7, &key, 0);
    s.subscriptions.create(&hook, 10).await.unwrap();
    let mut test = event(990, ws.id, EventType::WebhookTest, 5);
    test.ordering_key = hook.id.to_string();
    s.log.queue_test(&hook.id, &test, None).await.unwrap();
    let tests = [EventType::WebhookTest];
    settled(&s, ws.id, member.id, &tests, 1).await;
    let owner = s
        .feed
        .read(ws.id, member.id, start, &tests, 10)
        .await
        .unwrap();
    assert_eq!(ids_of(&owner.events), [test.id]);
    let other = s
        .feed
        .read(ws.id, colleague.id, start, &tests, 10)
        .await
        .unwrap();
    assert!(other.events.is_empty(), "not to another member");
    let back = s
        .feed
        .read_back(ws.id, colleague.id, latest, &tests, 10)
        .await
        .unwrap();
    assert!(back.is_empty(), "not backwards either");
}
