//! A commit announced in one process wakes the delivery worker of another through
//! PostgreSQL (`run_notifier` sends, `run_listener` listens), not after its poll; the process's
//! own listener ignores it (the announcement already woke its worker). A process alone on its
//! database sends no `NOTIFY`, and one that starts listening is notified from then on.

use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use timetrack_adapters::postgres::{DeliveryAnnouncer, LOOK_FOR_LISTENERS_EVERY, run_notifier};
use timetrack_adapters::run_listener;
use timetrack_testkit::TestDatabase;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, NoTls};

#[tokio::test]
async fn an_announcement_in_one_process_wakes_the_worker_of_another() {
    let db = TestDatabase::new().await;
    let (stop, stopped) = watch::channel(false);
    // "This" process: its announcer and notifier.
    let announcer = DeliveryAnnouncer::new();
    let notifier = notifying(&db, announcer.clone(), LOOK_FOR_LISTENERS_EVERY, &stopped);
    // This process's own listener, and another process's: each wakes its worker.
    let own = announcer.local_wake();
    let own_listener = listening(&db, announcer.clone(), &stopped);
    let other_process = DeliveryAnnouncer::new();
    let other = other_process.local_wake();
    let listener = listening(&db, other_process, &stopped);
    // A listener wakes its worker once when it starts listening (for anything announced
    // before), and again when it hears that the other started: from then on, notifications
    // reach it. Those wake-ups are let through first.
    for wake in [&own, &other] {
        tokio::time::timeout(Duration::from_secs(10), wake.notified())
            .await
            .expect("the listener reaches LISTEN");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for wake in [&own, &other] {
        let _ = wake.notified().now_or_never();
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(300), other.notified())
            .await
            .is_err(),
        "nothing announced, nothing wakes it"
    );
    announcer.announce(0);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), other.notified())
            .await
            .is_err(),
        "a write that queued nothing announces nothing"
    );
    for round in 0..3 {
        announcer.announce(2);
        tokio::time::timeout(Duration::from_secs(5), other.notified())
            .await
            .unwrap_or_else(|_| panic!("announcement {round} did not reach the other process"));
    }
    // The announcements woke this process's worker directly; its listener ignores the same
    // notifications coming back, but wakes it for another origin's.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = own.notified().now_or_never();
    let (sql, _heard) = overhear(db.url()).await;
    let origin = announcer.origin();
    sql.batch_execute(&format!("NOTIFY timetrack_deliveries, '{origin}'"))
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), own.notified())
            .await
            .is_err(),
        "the process's own listener ignores its notifications"
    );
    sql.batch_execute("NOTIFY timetrack_deliveries, 'another'")
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), own.notified())
        .await
        .expect("another origin's notification wakes the worker");
    stop_all(stop, [notifier, listener, own_listener]).await;
}

/// A process's listener on the test database, as `serve` starts it.
fn listening(
    db: &TestDatabase,
    announcer: DeliveryAnnouncer,
    stopped: &watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(run_listener(
        db.url().to_owned(),
        db.pool(),
        announcer,
        stopped.clone(),
    ))
}

/// A process's notifier on the test database, looking for the others' listeners every
/// `look_every`.
fn notifying(
    db: &TestDatabase,
    announcer: DeliveryAnnouncer,
    look_every: Duration,
    stopped: &watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(run_notifier(
        db.pool(),
        announcer,
        look_every,
        stopped.clone(),
    ))
}

/// Shuts down, and expects every task to stop within 5 s.
async fn stop_all<const N: usize>(stop: watch::Sender<bool>, tasks: [JoinHandle<()>; N]) {
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await
    .expect("every task stops on shutdown");
}

/// The payloads of the notifications on the delivery channel, as a plain `LISTEN` connection
/// (not a process's listener: its name is not one) receives them.
async fn overhear(url: &str) -> (tokio_postgres::Client, mpsc::UnboundedReceiver<String>) {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(note) = message
                && tx.send(note.payload().to_owned()).is_err()
            {
                return;
            }
        }
    });
    client
        .batch_execute("LISTEN timetrack_deliveries")
        .await
        .unwrap();
    (client, rx)
}

/// The next payload heard within `within` that is not `skipping` nor a listener's probe of
/// itself (`probe:…`, which a process sends to its own listener), if any.
async fn next_heard(
    heard: &mut mpsc::UnboundedReceiver<String>,
    skipping: &str,
    within: Duration,
) -> Option<String> {
    tokio::time::timeout(within, async {
        loop {
            match heard.recv().await {
                Some(payload) if payload == skipping || payload.starts_with("probe:") => {}
                other => return other,
            }
        }
    })
    .await
    .ok()
    .flatten()
}

#[tokio::test]
async fn a_process_alone_sends_no_notify_and_one_that_starts_listening_is_notified_at_once() {
    let db = TestDatabase::new().await;
    let (_overhearing, mut heard) = overhear(db.url()).await;
    let (stop, stopped) = watch::channel(false);
    // This process, with its own listener. Its notifier looks for the others' listeners only
    // once a minute here, so what tells it of the process started below is that process's
    // listener saying it listens.
    let announcer = DeliveryAnnouncer::new();
    let origin = announcer.origin().to_string();
    let own_listener = listening(&db, announcer.clone(), &stopped);
    assert_eq!(
        next_heard(&mut heard, "", Duration::from_secs(10)).await,
        Some(origin.clone()),
        "a listener says it listens when it starts"
    );
    let notifier = notifying(&db, announcer.clone(), Duration::from_secs(60), &stopped);
    for _ in 0..3 {
        announcer.announce(1);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        next_heard(&mut heard, "", Duration::from_millis(500)).await,
        None,
        "alone on its database, the process sends no NOTIFY"
    );

    // Another process starts listening: its listener says so, this process's listener hears
    // it, and this process's announcements reach it from then on.
    let other_process = DeliveryAnnouncer::new();
    let other_origin = other_process.origin().to_string();
    let other = other_process.local_wake();
    let other_listener = listening(&db, other_process, &stopped);
    assert_eq!(
        next_heard(&mut heard, "", Duration::from_secs(10)).await,
        Some(other_origin.clone()),
    );
    tokio::time::timeout(Duration::from_secs(10), other.notified())
        .await
        .expect("the other listener reaches LISTEN");
    // Its own hello reached this process's listener as well as this test's connection.
    tokio::time::sleep(Duration::from_millis(200)).await;
    announcer.announce(1);
    assert_eq!(
        next_heard(&mut heard, &other_origin, Duration::from_secs(5)).await,
        Some(origin.clone()),
        "the process that started listening is notified within the minute between two looks"
    );
    tokio::time::timeout(Duration::from_secs(5), other.notified())
        .await
        .expect("and its worker is woken");

    stop_all(stop, [notifier, own_listener, other_listener]).await;
}

#[tokio::test]
async fn a_process_finds_a_listener_already_there_by_looking() {
    let db = TestDatabase::new().await;
    let (stop, stopped) = watch::channel(false);
    // Another process listens before this one starts; this one has no listener of its own, so
    // it never hears the other's start and can only look.
    let other_process = DeliveryAnnouncer::new();
    let other = other_process.local_wake();
    let other_listener = listening(&db, other_process, &stopped);
    tokio::time::timeout(Duration::from_secs(10), other.notified())
        .await
        .expect("the other listener reaches LISTEN");
    let announcer = DeliveryAnnouncer::new();
    let notifier = notifying(&db, announcer.clone(), Duration::from_secs(60), &stopped);
    announcer.announce(1);
    tokio::time::timeout(Duration::from_secs(5), other.notified())
        .await
        .expect("the listener found in pg_stat_activity is notified");
    stop_all(stop, [notifier, other_listener]).await;
}

/// The backend pids of the listening connections of `announcer` on `url` seen in
/// `pg_stat_activity`, looked at every 200 ms for `during`.
async fn listener_pids(url: &str, announcer: &DeliveryAnnouncer, during: Duration) -> Vec<i32> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    let name = announcer.listener_name();
    let mut pids: Vec<i32> = Vec::new();
    let until = tokio::time::Instant::now() + during;
    while tokio::time::Instant::now() < until {
        for row in client
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .await
            .unwrap()
        {
            let pid: i32 = row.get(0);
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    pids
}

/// A listener proves its connection by a probe sent through the writers' pool: one on another
/// database than the pool's (as a listener left on a demoted primary is on another server than
/// the writes) never hears it, and is opened again; one that hears its probes keeps its
/// connection.
#[tokio::test]
async fn a_listener_that_does_not_hear_its_probe_through_the_pool_reconnects() {
    let (listened, written) = (TestDatabase::new().await, TestDatabase::new().await);
    let (stop, stopped) = watch::channel(false);
    let deaf = DeliveryAnnouncer::new();
    let deaf_listener = tokio::spawn(run_listener(
        listened.url().to_owned(),
        written.pool(),
        deaf.clone(),
        stopped.clone(),
    ));
    let proven = DeliveryAnnouncer::new();
    let proven_listener = listening(&listened, proven.clone(), &stopped);
    let watch = Duration::from_secs(7);
    let (deaf_pids, proven_pids) = futures_util::join!(
        listener_pids(listened.url(), &deaf, watch),
        listener_pids(listened.url(), &proven, watch)
    );
    assert!(
        deaf_pids.len() >= 2,
        "a listener whose probe did not come back within 3 s connects again: {deaf_pids:?}"
    );
    assert_eq!(
        proven_pids.len(),
        1,
        "a listener that hears its probes keeps its connection: {proven_pids:?}"
    );
    stop_all(stop, [deaf_listener, proven_listener]).await;
}
