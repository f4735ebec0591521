//! The machine's own limits, measured in the same run: HTTPS POSTs to the receiver over kept-alive
//! connections (with the service's own sender, without its queue), and one-row commits.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Result;
use timetrack_adapters::{HyperWebhookSender, SenderSettings};
use timetrack_domain::delivery::build_request;
use timetrack_domain::ports::WebhookSender;

use crate::Sizes;
use crate::setup::{Environment, connect};
use crate::stats::Repeated;

/// Concurrency of the HTTPS measurement: the per-subscription cap of in-flight deliveries.
pub const HTTPS_CONCURRENCY: usize = 10;
/// Concurrency of the wide HTTPS measurement: the worker's default concurrency.
pub const HTTPS_WIDE_CONCURRENCY: usize = 64;
/// Connections of the commit measurement: the server's default pool size.
pub const COMMIT_CONNECTIONS: usize = 16;

/// What the machine can do.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// HTTPS POSTs per second at [`HTTPS_CONCURRENCY`].
    pub https_posts: Repeated,
    /// HTTPS POSTs per second at [`HTTPS_WIDE_CONCURRENCY`].
    pub https_posts_wide: Repeated,
    /// One-row commits per second on [`COMMIT_CONNECTIONS`] connections.
    pub commits: Repeated,
    /// One-row commits per second on one connection.
    pub commits_serial: Repeated,
}

/// Measures every limit `sizes.runs` times.
pub async fn measure(env: &Environment, sizes: Sizes) -> Result<Limits> {
    let mut limits = Limits::default();
    for _ in 0..sizes.runs {
        limits
            .https_posts
            .push(https_rate(env, sizes, HTTPS_CONCURRENCY).await?);
        limits
            .https_posts_wide
            .push(https_rate(env, sizes, HTTPS_WIDE_CONCURRENCY).await?);
        limits
            .commits
            .push(commit_rate(env, sizes, COMMIT_CONNECTIONS).await?);
        limits
            .commits_serial
            .push(commit_rate(env, sizes, 1).await?);
    }
    Ok(limits)
}

/// Signed POSTs of a typical payload to the receiver for the window, `concurrency` at a time.
async fn https_rate(env: &Environment, sizes: Sizes, concurrency: usize) -> Result<f64> {
    let sender = Arc::new(HyperWebhookSender::new(SenderSettings {
        allow_private_targets: true,
        extra_roots: Some(env.receiver.ca_pem_path()),
        max_idle_per_host: concurrency,
        ..SenderSettings::default()
    })?);
    let body = serde_json::json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "name": "Acme Logistics GmbH",
        "email": "billing@acme.example",
        "phone": null,
        "address": null,
        "status": "active",
        "type": "company",
        "workspace": {"id": uuid::Uuid::new_v4().to_string(), "name": "Bench"},
        "created_at": "2026-11-22T09:00:00Z",
        "updated_at": "2026-11-22T09:00:00Z"
    })
    .to_string();
    let url = env.receiver.url("/limits/https");
    let request = build_request(
        &url,
        timetrack_domain::delivery::Secrets {
            current: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            previous: None,
        },
        &uuid::Uuid::new_v4().to_string(),
        "CLIENT_CREATED",
        &body,
        time::OffsetDateTime::now_utc(),
        timetrack_domain::delivery::Ordering {
            key: "c1",
            sequence: 1,
        },
        &timetrack_domain::model::CustomHeaders::none(),
    )?;
    let request = Arc::new(request);
    // Warm the connections first.
    let warm: Vec<_> = (0..concurrency)
        .map(|_| {
            let (sender, request) = (sender.clone(), request.clone());
            tokio::spawn(async move { sender.send(&request).await })
        })
        .collect();
    for task in warm {
        task.await?;
    }
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + sizes.limit_window;
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (sender, request, done) = (sender.clone(), request.clone(), done.clone());
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    let report = sender.send(&request).await;
                    if matches!(
                        report.outcome,
                        timetrack_domain::delivery::AttemptOutcome::Delivered { .. }
                    ) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// Autocommitted one-row inserts for the window, on `connections` connections.
async fn commit_rate(env: &Environment, sizes: Sizes, connections: usize) -> Result<f64> {
    let (setup, driver) = connect(&env.database_url).await?;
    setup
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS bench_commit_probe \
             (id bigserial PRIMARY KEY, at timestamptz NOT NULL, note text NOT NULL); \
             TRUNCATE bench_commit_probe",
        )
        .await?;
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..connections {
        clients.push(connect(&env.database_url).await?);
    }
    let deadline = Instant::now() + sizes.limit_window;
    let started = Instant::now();
    for (client, _) in &clients {
        let statement = client
            .prepare("INSERT INTO bench_commit_probe (at, note) VALUES (now(), $1)")
            .await?;
        let client = client.clone();
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                if client.execute(&statement, &[&"probe"]).await.is_ok() {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    setup.batch_execute("DROP TABLE bench_commit_probe").await?;
    drop(clients);
    driver.abort();
    Ok(rate)
}
