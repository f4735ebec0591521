//! Outage and recovery: ten subscriptions of one workspace take a steady rate of events; one of
//! them answers 503 for a while, then 200 again. Measured: the nine healthy subscriptions'
//! latency throughout, and how long after the recovery the failing one's backlog took to arrive.
//! The server runs with a short retry schedule ([`SCHEDULE`]), as the workload says.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::Value;
use timetrack_testkit::{Behaviour, Received};

use crate::delivery::{arrivals, publish_steady, subscribed};
use crate::setup::{Environment, Server, connect};
use crate::stats::{Latencies, Repeated, slow_span};
use crate::{Sizes, progress};

/// The retry schedule of the server this workload runs against.
pub const SCHEDULE: &str = "1s,2s,4s,8s,16s,30s";

/// Healthy subscriptions beside the failing one.
pub const HEALTHY: usize = 9;

/// What the workload measured.
#[derive(Debug, Clone, Default)]
pub struct Outage {
    /// Seconds the failing subscription answered 503, and the events/s meanwhile.
    pub outage_seconds: u64,
    pub rate: u32,
    /// The healthy subscriptions' delivery latency over the whole run, in milliseconds.
    pub healthy_p50: Repeated,
    pub healthy_p99: Repeated,
    /// Their p99 for the events answered during the outage, and after the recovery.
    pub healthy_p99_outage: Repeated,
    pub healthy_p99_recovery: Repeated,
    /// Deliveries the failing subscription had not received when it recovered.
    pub backlog: Repeated,
    /// Seconds from the recovery to the arrival of the last of that backlog.
    pub drained_in_s: Repeated,
    /// Attempts answered 503 during the outage.
    pub refused_attempts: Repeated,
    /// The failing subscription's deliveries whose schedule ended during the outage (failed for
    /// good, as decisions.md says; a replay sends them again), summed over the repetitions.
    pub gave_up: usize,
    /// Deliveries neither received (with a 2xx) nor failed for good, summed over the
    /// repetitions.
    pub lost: usize,
    /// Deliveries received with a 2xx more than once, summed over the repetitions.
    pub duplicates: usize,
}

/// What arrived so far, read from the receiver a slice at a time.
#[derive(Default)]
struct Arrived {
    /// Requests read so far (an index into the receiver's log).
    read: usize,
    /// Every request under the healthy tag, for the latency samples.
    healthy: Vec<Received>,
    /// The distinct (subscription path, client id) pairs of `healthy`, kept as they arrive:
    /// counting them anew on each look parsed every body so far, twice a second, on the cores
    /// the drain being measured runs on.
    healthy_seen: HashSet<(String, String)>,
    /// First 2xx arrival of each event at the failing subscription, by its client's id.
    recovered: HashMap<String, Instant>,
    /// 2xx arrivals at the failing subscription beyond the first of their event.
    duplicates: usize,
    /// 503 answers at the failing subscription.
    refused: usize,
}

impl Arrived {
    fn update(&mut self, env: &Environment, healthy_tag: &str, down_path: &str) {
        let new = env.receiver.received_from(self.read);
        self.read += new.len();
        let healthy_prefix = format!("/{healthy_tag}/");
        for r in new {
            if r.path.starts_with(&healthy_prefix) {
                if let Some(id) = client_id(&r) {
                    self.healthy_seen.insert((r.path.clone(), id));
                }
                self.healthy.push(r);
            } else if r.path == down_path {
                if r.answered == Some(503) {
                    self.refused += 1;
                    continue;
                }
                let Some(id) = client_id(&r) else { continue };
                if self.recovered.insert(id, r.at).is_some() {
                    self.duplicates += 1;
                }
            }
        }
    }

    fn healthy_unique(&self) -> usize {
        self.healthy_seen.len()
    }
}

/// The id of the client a CLIENT_CREATED delivery is about (what the publisher keeps).
fn client_id(r: &Received) -> Option<String> {
    let body: Value = serde_json::from_slice(&r.body).ok()?;
    body["id"].as_str().map(str::to_owned)
}

/// The workload, `sizes.runs` times, on `server` (started with [`SCHEDULE`]).
pub async fn measure(env: &Environment, server: &Server, sizes: Sizes) -> Result<Outage> {
    let mut figures = Outage {
        outage_seconds: sizes.outage_seconds,
        rate: sizes.latency_rate,
        ..Outage::default()
    };
    for run in 0..sizes.runs {
        let (account, tag) = subscribed(env, server, HEALTHY, &format!("outage-{run}")).await?;
        let down_path = format!("/{tag}-down/0");
        server
            .subscribe(
                &account.key,
                &env.receiver.url(&down_path),
                &["CLIENT_CREATED"],
            )
            .await?;
        env.receiver
            .respond(&down_path, Behaviour::Respond(503, vec![]));
        let mut arrived = Arrived {
            read: env.receiver.count(),
            ..Arrived::default()
        };
        let outage = Duration::from_secs(sizes.outage_seconds);
        let total = outage + Duration::from_secs(sizes.recovery_seconds);
        let started = Instant::now();
        let recovered_at = std::sync::Mutex::new(None::<Instant>);
        let stop = AtomicBool::new(false);
        let publisher = publish_steady(server, &account.key, &tag, sizes.latency_rate, |_| {
            stop.load(Ordering::Relaxed)
        });
        let switch = async {
            tokio::time::sleep_until((started + outage).into()).await;
            env.receiver
                .respond(&down_path, Behaviour::Respond(200, vec![]));
            *recovered_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
            tokio::time::sleep_until((started + total).into()).await;
            stop.store(true, Ordering::Relaxed);
        };
        let (answered, ()) = tokio::join!(publisher, switch);
        let answered = answered?;
        let recovered_at = recovered_at
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .unwrap_or(started + outage);
        // Everything should arrive: wait while anything does, up to the schedule's longest wait
        // (and a margin) without progress.
        let expected_healthy = answered.len() * HEALTHY;
        let mut last_progress = (0, Instant::now());
        loop {
            arrived.update(env, &tag, &down_path);
            let progress = arrived.healthy.len() + arrived.recovered.len() + arrived.refused;
            if arrived.recovered.len() >= answered.len()
                && arrived.healthy_unique() >= expected_healthy
            {
                break;
            }
            if progress != last_progress.0 {
                last_progress = (progress, Instant::now());
            } else if last_progress.1.elapsed() > Duration::from_secs(45) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // Give duplicates, if any, a moment.
        tokio::time::sleep(Duration::from_millis(500)).await;
        arrived.update(env, &tag, &down_path);

        let healthy = arrivals(&arrived.healthy, &tag, &answered, started);
        let backlog: Vec<&String> = answered
            .iter()
            .filter(|(_, at)| **at < recovered_at)
            .map(|(id, _)| id)
            .collect();
        let drained = backlog
            .iter()
            .filter_map(|id| arrived.recovered.get(*id))
            .max()
            .map_or(0.0, |last| {
                last.saturating_duration_since(recovered_at).as_secs_f64()
            });
        let refused_in_outage = arrived.refused;
        let gave_up = failed_for_good(env, &env.receiver.url(&down_path)).await?;
        let lost = answered
            .len()
            .saturating_sub(arrived.recovered.len() + gave_up)
            + expected_healthy.saturating_sub(healthy.unique);
        let healthy_duplicates = arrived.healthy.len().saturating_sub(healthy.unique);
        let (p50, p99) = (
            healthy.samples.percentile(50.0),
            healthy.samples.percentile(99.0),
        );
        // The same split at the recovery, and where the slow ones (over the 10 ms target) fell.
        let recovery_after = recovered_at
            .saturating_duration_since(started)
            .as_secs_f64();
        let timed = healthy.timed();
        let phase = |during: bool| {
            Latencies(
                timed
                    .iter()
                    .filter(|(at, _)| (*at < recovery_after) == during)
                    .map(|(_, ms)| *ms)
                    .collect(),
            )
            .percentile(99.0)
        };
        let (p99_outage, p99_recovery) = (phase(true), phase(false));
        let slow = slow_span(&timed, 10.0).map_or_else(String::new, |w| {
            format!(
                " ({} over 10 ms, answered {:.1}-{:.1} s into the run, {} of them in second {})",
                w.count, w.first, w.last, w.worst_count, w.worst_second
            )
        });
        progress(&format!(
            "outage run {}: {} events at {}/s, one of {} subscriptions answering 503 for {} s: \
             healthy p50 {p50:.2} ms, p99 {p99:.2} ms (during the outage {p99_outage:.2} ms, \
             after it {p99_recovery:.2} ms){slow}; backlog {} delivered {drained:.1} s after the \
             recovery; {refused_in_outage} attempts refused; {gave_up} failed for good (their \
             schedule ended during the outage); lost {lost}, duplicates {}",
            run + 1,
            answered.len(),
            sizes.latency_rate,
            HEALTHY + 1,
            sizes.outage_seconds,
            backlog.len(),
            arrived.duplicates + healthy_duplicates
        ));
        figures.healthy_p50.push(p50);
        figures.healthy_p99.push(p99);
        figures.healthy_p99_outage.push(p99_outage);
        figures.healthy_p99_recovery.push(p99_recovery);
        figures.backlog.push(backlog.len() as f64);
        figures.drained_in_s.push(drained);
        figures.refused_attempts.push(refused_in_outage as f64);
        figures.gave_up += gave_up;
        figures.lost += lost;
        figures.duplicates += arrived.duplicates + healthy_duplicates;
        env.settle().await?;
    }
    Ok(figures)
}

/// How many deliveries to the subscription of `url` failed for good.
async fn failed_for_good(env: &Environment, url: &str) -> Result<usize> {
    let (client, driver) = connect(&env.database_url).await?;
    let row = client
        .query_one(
            "SELECT count(*) FROM deliveries d \
             JOIN webhook_subscriptions s ON s.id = d.subscription_id \
             WHERE s.url = $1 AND d.status = 'FAILED'",
            &[&url],
        )
        .await?;
    driver.abort();
    Ok(usize::try_from(row.get::<_, i64>(0))?)
}
