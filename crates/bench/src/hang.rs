//! Hanging endpoints of one tenant beside a healthy tenant: workspace A has [`HANGING`] webhooks
//! whose receiver reads each request and never answers (every attempt holds its slot for the
//! server's whole time-out, 15 s), with events enough to want every slot of the process;
//! workspace B has one healthy webhook and takes the latency workload's steady rate. Measured:
//! B's latency, from each event's answer to its arrival, against the same rate with nobody
//! hanging (the latency workload at S = 1), and how many of A's requests hung when it began.
//! Each run's hanging workspace is a new one, and the earlier runs' attempts may still hang
//! (their workspaces' deliveries are cancelled, but an attempt runs to its time-out): from the
//! second run on, B shares the process with two hanging workspaces.

use std::time::{Duration, Instant};

use anyhow::Result;
use timetrack_testkit::Behaviour;

use crate::delivery::{arrivals, publish_steady, subscribed, workspace};
use crate::setup::{Environment, Server, connect};
use crate::stats::Repeated;
use crate::{Sizes, progress};

/// Webhooks of the tenant whose endpoints hang.
pub const HANGING: usize = 100;

/// Events sent to the hanging tenant before the measurement: each is one delivery per webhook.
pub const HANGING_EVENTS: usize = 3;

/// What the workload measured.
#[derive(Debug, Clone, Default)]
pub struct Hang {
    /// The healthy tenant's events/s.
    pub rate: u32,
    /// The healthy tenant's delivery latency, in milliseconds.
    pub p50: Repeated,
    pub p99: Repeated,
    /// Requests the hanging tenant's endpoints held when the measurement began.
    pub hung: Repeated,
    /// The healthy tenant's deliveries not received, summed over the repetitions.
    pub lost: usize,
}

/// The workload, `sizes.runs` times.
pub async fn measure(env: &Environment, server: &Server, sizes: Sizes) -> Result<Hang> {
    let mut figures = Hang {
        rate: sizes.latency_rate,
        ..Hang::default()
    };
    for run in 0..sizes.runs {
        let (hanging, hang_tag) = workspace(env, &format!("hang-{run}")).await?;
        let hang_prefix = format!("/{hang_tag}-hang/");
        for n in 0..HANGING {
            let path = format!("{hang_prefix}{n}");
            env.receiver
                .respond(&path, Behaviour::Slow(Duration::from_secs(3_600), 200));
            server
                .subscribe(&hanging.key, &env.receiver.url(&path), &["CLIENT_CREATED"])
                .await?;
        }
        let (healthy, tag) = subscribed(env, server, 1, &format!("hang-healthy-{run}")).await?;
        let read = env.receiver.count();
        for n in 0..HANGING_EVENTS {
            server
                .post(
                    &hanging.key,
                    "/api/clients",
                    &serde_json::json!({"name": format!("{hang_tag} {n}")}),
                )
                .await?;
        }
        let hung = || {
            env.receiver
                .received_from(read)
                .iter()
                .filter(|r| r.path.starts_with(&hang_prefix))
                .count()
        };
        // Until the hanging tenant holds what it can.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = (0, Instant::now());
        while Instant::now() < deadline {
            let now = hung();
            if now != last.0 {
                last = (now, Instant::now());
            } else if now > 0 && last.1.elapsed() > Duration::from_millis(500) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let held = hung();
        let started = Instant::now();
        let until = started + Duration::from_secs(sizes.latency_seconds);
        let answered = publish_steady(server, &healthy.key, &tag, sizes.latency_rate, |_| {
            Instant::now() >= until
        })
        .await?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let got = loop {
            let got = arrivals(&env.receiver.received_from(read), &tag, &answered, started);
            if got.unique >= answered.len() || Instant::now() > deadline {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let lost = answered.len().saturating_sub(got.unique);
        let (p50, p99) = (got.samples.percentile(50.0), got.samples.percentile(99.0));
        progress(&format!(
            "hang run {}: {} events at {}/s beside {HANGING} hanging webhooks of another \
             workspace ({held} requests hanging at the start): p50 {p50:.2} ms, p99 {p99:.2} ms; lost {lost}",
            run + 1,
            answered.len(),
            sizes.latency_rate,
        ));
        figures.p50.push(p50);
        figures.p99.push(p99);
        figures.hung.push(held as f64);
        figures.lost += lost;
        end_workspace(env, &hanging.workspace_id).await?;
        env.settle().await?;
    }
    Ok(figures)
}

/// Ends the hanging workspace's webhooks and what they have queued, so that nothing of it is
/// retried into the next workload.
async fn end_workspace(env: &Environment, workspace_id: &str) -> Result<()> {
    let (client, driver) = connect(&env.database_url).await?;
    client
        .batch_execute(&format!(
            "UPDATE webhook_subscriptions SET status = 'DELETED', disabled_reason = NULL \
             WHERE workspace_id = '{workspace_id}'; \
             UPDATE deliveries SET status = 'CANCELLED' \
             WHERE workspace_id = '{workspace_id}' AND status = 'PENDING'; \
             DELETE FROM delivery_leases WHERE workspace_id = '{workspace_id}'"
        ))
        .await?;
    driver.abort();
    Ok(())
}
