//! A commit announced in one process wakes the delivery worker of another through
//! PostgreSQL (`run_notifier` sends, `run_listener` listens), not after its poll; the process's
//! own listener ignores it (the announcement already woke its worker).

use std::sync::Arc;
use std::time::Duration;

use timetrack_adapters::postgres::{DeliveryAnnouncer, run_notifier};
use timetrack_adapters::run_listener;
use timetrack_testkit::TestDatabase;
use tokio::sync::{Notify, watch};

#[tokio::test]
async fn an_announcement_in_one_process_wakes_the_worker_of_another() {
    let db = TestDatabase::new().await;
    let (stop, stopped) = watch::channel(false);
    // "This" process: its announcer and notifier.
    let announcer = DeliveryAnnouncer::new();
    let notifier = tokio::spawn(run_notifier(db.pool(), announcer.clone(), stopped.clone()));
    // This process's own listener, and another process's: each wakes its worker.
    let own = Arc::new(Notify::new());
    let own_listener = tokio::spawn(run_listener(
        db.url().to_owned(),
        own.clone(),
        announcer.origin(),
        stopped.clone(),
    ));
    let other = Arc::new(Notify::new());
    let listener = tokio::spawn(run_listener(
        db.url().to_owned(),
        other.clone(),
        DeliveryAnnouncer::new().origin(),
        stopped.clone(),
    ));
    // A listener wakes its worker once when it starts listening (for anything announced
    // before): from then on, notifications reach it.
    for wake in [&own, &other] {
        tokio::time::timeout(Duration::from_secs(10), wake.notified())
            .await
            .expect("the listener reaches LISTEN");
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
    assert!(
        tokio::time::timeout(Duration::from_millis(300), own.notified())
            .await
            .is_err(),
        "the process's own listener ignores its notifications"
    );
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        notifier.await.unwrap();
        listener.await.unwrap();
        own_listener.await.unwrap();
    })
    .await
    .expect("both stop on shutdown");
}
