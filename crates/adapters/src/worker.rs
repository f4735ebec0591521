//! The delivery worker: claims due deliveries and sends each on its own task, woken at once by
//! `NOTIFY` from the outbox and by a poll as a backstop (for retries that come due, and for a
//! lost listener connection).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use timetrack_domain::ports::{Clock, Housekeeping};
use timetrack_domain::services::DeliveryService;
use tokio::sync::{Notify, Semaphore, mpsc, watch};
use tokio_postgres::{AsyncMessage, NoTls};

use crate::metrics::Metrics;
use crate::postgres::DELIVERY_CHANNEL;

/// Most deliveries claimed in one query.
const MAX_BATCH: usize = 100;

/// How the worker runs.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSettings {
    /// Most deliveries in flight in this process.
    pub concurrency: usize,
    /// Longest sleep between claims when nothing wakes the worker.
    pub poll_interval: Duration,
    /// Longest time one attempt (send and record) may take; past it the attempt is abandoned and
    /// its lease left to expire. At most the lease.
    pub attempt_deadline: Duration,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            concurrency: 64,
            poll_interval: Duration::from_millis(500),
            attempt_deadline: Duration::from_secs(30),
        }
    }
}

/// Runs the worker until `shutdown` becomes true. Deliveries in flight then are abandoned; their
/// leases expire and another worker sends them again (at-least-once).
pub async fn run_worker(
    service: DeliveryService,
    metrics: Arc<Metrics>,
    wake: Arc<Notify>,
    settings: WorkerSettings,
    mut shutdown: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(settings.concurrency.max(1)));
    let deadline = settings.attempt_deadline;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let free = permits.available_permits().min(MAX_BATCH);
        if free == 0 {
            tokio::select! {
                permit = permits.clone().acquire_owned() => drop(permit),
                _ = shutdown.changed() => return,
            }
            continue;
        }
        let claimed = match service.claim(u32::try_from(free).unwrap_or(1)).await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!(error = %err, "claiming deliveries failed");
                tokio::select! {
                    () = tokio::time::sleep(settings.poll_interval) => {}
                    _ = shutdown.changed() => return,
                }
                continue;
            }
        };
        let full = claimed.len() == free;
        for delivery in claimed {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            let service = service.clone();
            let metrics = metrics.clone();
            let wake = wake.clone();
            tokio::spawn(async move {
                let attempt = tokio::time::timeout(deadline, service.deliver(&delivery));
                let outcome = attempt.await.unwrap_or_else(|_| {
                    Err(timetrack_domain::DomainError::Unavailable(
                        "the attempt did not finish before its deadline".into(),
                    ))
                });
                match outcome {
                    Ok(record) => {
                        metrics.observe_attempt(&record);
                        tracing::debug!(
                            event_id = %delivery.event_id,
                            webhook_id = %delivery.subscription_id,
                            next = ?record.next,
                            "delivery attempted"
                        );
                    }
                    Err(err) => {
                        metrics.observe_record_error();
                        tracing::warn!(
                        event_id = %delivery.event_id,
                        webhook_id = %delivery.subscription_id,
                        error = %err,
                        "recording a delivery failed; its lease will expire and it will be retried"
                        );
                    }
                }
                drop(permit);
                // A finished delivery frees a permit and, often, a slot of its subscription's
                // in-flight cap: claim again at once rather than at the next poll.
                wake.notify_one();
            });
        }
        if !full {
            tokio::select! {
                () = wake.notified() => {}
                () = tokio::time::sleep(settings.poll_interval) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// Keeps a `LISTEN` connection on `url` and wakes `wake` on every delivery notification,
/// reconnecting after a second when the connection is lost, until `shutdown`.
pub async fn run_listener(url: String, wake: Arc<Notify>, mut shutdown: watch::Receiver<bool>) {
    loop {
        match listen(&url, &wake, &mut shutdown).await {
            Ok(Listening::ShutDown) => return,
            Ok(Listening::Lost) => {
                tracing::warn!("delivery notification connection closed; reconnecting");
            }
            Err(err) => tracing::warn!(error = %err, "delivery notifications lost; reconnecting"),
        }
        // Whatever was announced meanwhile is picked up by the next claim.
        wake.notify_one();
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// How a listening connection ended.
enum Listening {
    /// Asked to stop.
    ShutDown,
    /// The connection closed.
    Lost,
}

async fn listen(
    url: &str,
    wake: &Notify,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Listening, tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls).await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => {
                    if tx.send(()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {DELIVERY_CHANNEL}"))
        .await?;
    wake.notify_one();
    loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(()) => wake.notify_one(),
                None => break,
            },
            _ = shutdown.changed() => {
                driver.abort();
                return Ok(Listening::ShutDown);
            }
        }
    }
    drop(client);
    Ok(Listening::Lost)
}

/// Purges rows past their retention every `interval` (the first pass at once), until `shutdown`.
pub async fn run_housekeeping(
    store: Arc<dyn Housekeeping>,
    clock: Arc<dyn Clock>,
    retention: time::Duration,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        match store.purge(clock.now(), retention).await {
            Ok(purged) => tracing::info!(?purged, "housekeeping done"),
            Err(err) => tracing::warn!(error = %err, "housekeeping failed; next pass will retry"),
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
    }
}
