//! Delivery workloads: a burst of events through the public API (throughput), and a steady rate
//! (latency from the API's response to the event's arrival at the receiver).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{Value, json};
use timetrack_testkit::Received;

use crate::cpu::{CpuPerRequest, CpuSample};
use crate::dbstats::{DbCounters, DbPerEvent};
use crate::setup::{Account, Environment, Server};
use crate::stats::{Latencies, Repeated, slow_span};
use crate::{Sizes, progress};

/// How long a workload waits for the next delivery before it counts the rest as lost.
const PATIENCE: Duration = Duration::from_secs(30);

/// Subscription counts measured.
pub const SUBSCRIPTIONS: [usize; 2] = [1, 10];

/// The throughput figures of one subscription count.
#[derive(Debug, Clone, Default)]
pub struct Throughput {
    pub subscriptions: usize,
    /// Events accepted (201) per second, over the whole burst.
    pub accepted_per_s: Repeated,
    /// Unique deliveries per second, from the first request to the last arrival.
    pub deliveries_per_s: Repeated,
    /// Deliveries per second that arrived while events were still being created: how far
    /// delivery kept up with a burst that shares the machine with it.
    pub during_creation_per_s: Repeated,
    /// Deliveries expected and never received, summed over the repetitions.
    pub lost: usize,
    /// Deliveries received more than once, summed over the repetitions.
    pub duplicates: usize,
    /// Requests not answered 201, summed over the repetitions.
    pub refused: usize,
    /// CPU per event over each run (from the first request until every delivery arrived).
    pub cpu: Vec<CpuPerRequest>,
    /// The database's transactions and statements per event over each run.
    pub db: Vec<DbPerEvent>,
}

/// The latency figures of one subscription count.
#[derive(Debug, Clone, Default)]
pub struct Latency {
    pub subscriptions: usize,
    pub p50: Repeated,
    pub p95: Repeated,
    pub p99: Repeated,
    /// Every sample of the median repetition (by p99), for the plot.
    pub samples: Latencies,
    pub lost: usize,
    /// CPU per event over each run (from the first request until every delivery arrived): the
    /// server, the database, the tool (driver and receiver) and the rest of the machine.
    pub cpu: Vec<CpuPerRequest>,
    /// The database's transactions and statements per event over each run.
    pub db: Vec<DbPerEvent>,
}

/// Workload 1 for each subscription count.
pub async fn throughput(
    env: &Environment,
    server: &Server,
    sizes: Sizes,
) -> Result<Vec<Throughput>> {
    let mut all = Vec::new();
    for s in SUBSCRIPTIONS {
        let mut figures = Throughput {
            subscriptions: s,
            ..Throughput::default()
        };
        for run in 0..sizes.runs {
            let (account, tag) =
                subscribed_with_filter(env, server, s, &format!("burst{s}-{run}")).await?;
            let before = env.receiver.count();
            let next = Arc::new(AtomicUsize::new(0));
            let accepted = Arc::new(AtomicUsize::new(0));
            let db_before = DbCounters::read(&env.database_url).await?;
            let cpu_before = CpuSample::now(server.pid());
            let started = Instant::now();
            let clients: Vec<_> = (0..sizes.burst_clients)
                .map(|_| {
                    let (next, accepted) = (next.clone(), accepted.clone());
                    let (http, base, key) = (
                        server.http.clone(),
                        server.base.clone(),
                        account.key.clone(),
                    );
                    let (tag, events) = (tag.clone(), sizes.burst_events);
                    tokio::spawn(async move {
                        loop {
                            let n = next.fetch_add(1, Ordering::Relaxed);
                            if n >= events {
                                return;
                            }
                            let res = http
                                .post(format!("{base}/api/clients"))
                                .bearer_auth(&key)
                                .json(&json!({"name": format!("{tag} client {n}")}))
                                .send()
                                .await;
                            if res.is_ok_and(|r| r.status() == 201) {
                                accepted.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            for client in clients {
                client.await?;
            }
            let accept_time = started.elapsed();
            // How far delivery kept up while events were still being created.
            let during_creation = env.receiver.count() - before;
            let accepted = accepted.load(Ordering::Relaxed);
            let expected = accepted * s;
            let received = wait_for(env, before, expected, PATIENCE).await;
            let cpu = CpuSample::now(server.pid())
                .zip(cpu_before)
                .and_then(|(after, before)| before.per_request(&after, accepted));
            let db = db_before.per_event(&DbCounters::read(&env.database_url).await?, accepted);
            let mine = tagged(&received, &tag);
            let span = mine.span_since(started);
            figures
                .accepted_per_s
                .push(accepted as f64 / accept_time.as_secs_f64());
            figures
                .deliveries_per_s
                .push(mine.unique as f64 / span.max(1e-9));
            figures
                .during_creation_per_s
                .push(during_creation as f64 / accept_time.as_secs_f64());
            figures.lost += expected.saturating_sub(mine.unique);
            figures.duplicates += mine.duplicates();
            figures.refused += sizes.burst_events - accepted;
            figures.cpu.extend(cpu);
            figures.db.extend(db);
            progress(&format!(
                "throughput S={s} run {}: {:.0} accepted/s, {:.0} deliveries/s ({during_creation} \
                 arrived in the {:.2} s of creation), lost {}, duplicates {}{}",
                run + 1,
                accepted as f64 / accept_time.as_secs_f64(),
                mine.unique as f64 / span.max(1e-9),
                accept_time.as_secs_f64(),
                expected.saturating_sub(mine.unique),
                mine.duplicates(),
                per_event(cpu, db)
            ));
        }
        all.push(figures);
    }
    Ok(all)
}

/// Workload 2 for each subscription count.
pub async fn latency(env: &Environment, server: &Server, sizes: Sizes) -> Result<Vec<Latency>> {
    let mut all = Vec::new();
    for s in SUBSCRIPTIONS {
        let mut figures = Latency {
            subscriptions: s,
            ..Latency::default()
        };
        let mut runs = Vec::new();
        for run in 0..sizes.runs {
            let (account, tag) =
                subscribed_with_filter(env, server, s, &format!("steady{s}-{run}")).await?;
            let before = env.receiver.count();
            let total = u64::from(sizes.latency_rate) * sizes.latency_seconds;
            let db_before = DbCounters::read(&env.database_url).await?;
            let cpu_before = CpuSample::now(server.pid());
            let started = Instant::now();
            let answered = publish_steady(server, &account.key, &tag, sizes.latency_rate, |n| {
                n >= total
            })
            .await?;
            let expected = answered.len() * s;
            let received = wait_for(env, before, expected, PATIENCE).await;
            let cpu = CpuSample::now(server.pid())
                .zip(cpu_before)
                .and_then(|(after, before)| before.per_request(&after, answered.len()));
            let db_after = DbCounters::read(&env.database_url).await?;
            let db = db_before.per_event(&db_after, answered.len());
            figures.cpu.extend(cpu);
            figures.db.extend(db);
            let arrived = arrivals(&received, &tag, &answered, started);
            let timed = arrived.timed();
            let Arrivals {
                samples,
                unique: seen,
                ..
            } = arrived;
            figures.lost += expected.saturating_sub(seen);
            let (p50, p95, p99) = (
                samples.percentile(50.0),
                samples.percentile(95.0),
                samples.percentile(99.0),
            );
            figures.p50.push(p50);
            figures.p95.push(p95);
            figures.p99.push(p99);
            let slow = slow_span(&timed, p99).map_or_else(String::new, |w| {
                format!(
                    "; the {} over p99 answered {:.1}-{:.1} s into the run, {} of them in second {}",
                    w.count, w.first, w.last, w.worst_count, w.worst_second
                )
            });
            let cpu = per_event(cpu, db);
            progress(&format!(
                "latency S={s} run {}: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({} samples){slow}{cpu}",
                run + 1,
                p50,
                p95,
                p99,
                samples.0.len()
            ));
            runs.push(samples);
        }
        runs.sort_by(|a, b| a.percentile(99.0).total_cmp(&b.percentile(99.0)));
        figures.samples = runs.swap_remove(runs.len() / 2);
        all.push(figures);
    }
    Ok(all)
}

/// Creates clients named `<tag> client <n>` through `server` at `rate` a second, until `done`
/// says `n` requests are enough; returns when each created client was answered, by its id.
pub async fn publish_steady(
    server: &Server,
    key: &str,
    tag: &str,
    rate: u32,
    done: impl Fn(u64) -> bool,
) -> Result<HashMap<String, Instant>> {
    let answered: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / rate.max(1));
    let mut requests = Vec::new();
    let mut n = 0;
    while !done(n) {
        ticker.tick().await;
        let answered = answered.clone();
        let (http, base, key) = (server.http.clone(), server.base.clone(), key.to_owned());
        let name = format!("{tag} client {n}");
        n += 1;
        requests.push(tokio::spawn(async move {
            let res = http
                .post(format!("{base}/api/clients"))
                .bearer_auth(&key)
                .json(&json!({ "name": name }))
                .send()
                .await;
            let Ok(res) = res else { return };
            if res.status() != 201 {
                return;
            }
            let at = Instant::now();
            if let Ok(body) = res.json::<Value>().await
                && let Some(id) = body["id"].as_str()
            {
                answered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.to_owned(), at);
            }
        }));
    }
    for request in requests {
        request.await?;
    }
    Ok(std::mem::take(
        &mut *answered.lock().unwrap_or_else(PoisonError::into_inner),
    ))
}

/// The deliveries under one tag's receiver paths.
pub struct Tagged {
    /// How many arrived, duplicates included.
    pub received: usize,
    /// How many were unique (path and `webhook-id`).
    pub unique: usize,
    /// When the last arrived.
    pub last: Option<Instant>,
}

impl Tagged {
    /// Deliveries received more than once.
    pub fn duplicates(&self) -> usize {
        self.received - self.unique
    }

    /// Seconds from `start` to the last arrival (0 if none arrived).
    pub fn span_since(&self, start: Instant) -> f64 {
        self.last.map_or(0.0, |last| {
            last.saturating_duration_since(start).as_secs_f64()
        })
    }
}

/// The deliveries among `received` under `/<tag>/`.
pub fn tagged(received: &[Received], tag: &str) -> Tagged {
    let prefix = format!("/{tag}/");
    let mine: Vec<&Received> = received
        .iter()
        .filter(|r| r.path.starts_with(&prefix))
        .collect();
    let unique: HashSet<(&str, &str)> = mine
        .iter()
        .map(|r| (r.path.as_str(), r.header("webhook-id").unwrap_or_default()))
        .collect();
    Tagged {
        received: mine.len(),
        unique: unique.len(),
        last: mine.iter().map(|r| r.at).max(),
    }
}

/// The arrivals of a steady publisher's events.
pub struct Arrivals {
    /// For each first arrival under `/<tag>/` of an answered event, how long after its answer.
    pub samples: Latencies,
    /// When each of those was answered, in seconds after the start (beside `samples`).
    pub answered_after: Vec<f64>,
    /// Unique deliveries (path and event).
    pub unique: usize,
}

impl Arrivals {
    /// Each sample as (seconds after the start its event was answered, latency in ms).
    pub fn timed(&self) -> Vec<(f64, f64)> {
        self.answered_after
            .iter()
            .copied()
            .zip(self.samples.0.iter().copied())
            .collect()
    }
}

/// The arrivals among `received` of the events `answered` (see [`publish_steady`]).
pub fn arrivals(
    received: &[Received],
    tag: &str,
    answered: &HashMap<String, Instant>,
    started: Instant,
) -> Arrivals {
    let mut samples = Latencies::default();
    let mut answered_after = Vec::new();
    let mut seen = HashSet::new();
    for r in received
        .iter()
        .filter(|r| r.path.starts_with(&format!("/{tag}/")))
    {
        let Ok(body) = serde_json::from_slice::<Value>(&r.body) else {
            continue;
        };
        let Some(id) = body["id"].as_str() else {
            continue;
        };
        if let Some(answered_at) = answered.get(id)
            && seen.insert((r.path.clone(), id.to_owned()))
        {
            // A delivery can beat the response to the client: that is 0, not negative.
            samples.push(r.at.saturating_duration_since(*answered_at));
            answered_after.push(answered_at.saturating_duration_since(started).as_secs_f64());
        }
    }
    Arrivals {
        samples,
        answered_after,
        unique: seen.len(),
    }
}

/// The CPU and database figures per event of one run, for its progress line.
fn per_event(cpu: Option<CpuPerRequest>, db: Option<DbPerEvent>) -> String {
    let cpu = cpu.map_or_else(String::new, |c| {
        format!(
            "; CPU per event: server {:.0} µs, database {:.0} µs, rest {:.0} µs, tool {:.0} µs",
            c.server, c.database, c.rest, c.tool
        )
    });
    let db = db.map_or_else(String::new, |d| {
        let statements = d
            .statements
            .map_or_else(String::new, |n| format!(", {n:.2} statements"));
        format!("; per event {:.2} transactions{statements}", d.transactions)
    });
    format!("{cpu}{db}")
}

/// A new workspace with `s` subscriptions on the receiver under `/<tag>/`.
pub async fn subscribed(
    env: &Environment,
    server: &Server,
    s: usize,
    name: &str,
) -> Result<(Account, String)> {
    let (account, tag) = workspace(env, name).await?;
    subscribe_all(env, server, &account, &tag, s).await?;
    Ok((account, tag))
}

/// A new workspace named `Bench <tag>`, where the tag is `name` and a random suffix.
pub async fn workspace(env: &Environment, name: &str) -> Result<(Account, String)> {
    let tag = format!("{name}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let account = env.account(&format!("Bench {tag}")).await?;
    Ok((account, tag))
}

/// [`subscribed`], with one more subscription to CLIENT_CREATED filtered on a client of the
/// workspace made before it, which no event of the workload matches (under `/<tag>-filtered/`):
/// every event is checked against a filter, as in a workspace that uses them.
pub async fn subscribed_with_filter(
    env: &Environment,
    server: &Server,
    s: usize,
    name: &str,
) -> Result<(Account, String)> {
    let (account, tag) = workspace(env, name).await?;
    let (status, client) = server
        .post(
            &account.key,
            "/api/clients",
            &json!({"name": format!("{tag} filtered")}),
        )
        .await?;
    let Some(client_id) = client["id"].as_str().filter(|_| status == 201) else {
        anyhow::bail!("creating the filtered client failed: {status} {client}");
    };
    let (status, body) = server
        .post(
            &account.key,
            "/api/integrations/automation/webhooks/subscribe",
            &json!({
                "url": env.receiver.url(&format!("/{tag}-filtered/0")),
                "events": ["CLIENT_CREATED"],
                "filters": {"client_ids": [client_id]},
            }),
        )
        .await?;
    if status != 201 {
        anyhow::bail!("subscribing with a filter failed: {status} {body}");
    }
    subscribe_all(env, server, &account, &tag, s).await?;
    Ok((account, tag))
}

/// Subscribes `s` receiver paths `/<tag>/<i>` of `account`'s workspace to CLIENT_CREATED.
async fn subscribe_all(
    env: &Environment,
    server: &Server,
    account: &Account,
    tag: &str,
    s: usize,
) -> Result<()> {
    for i in 0..s {
        server
            .subscribe(
                &account.key,
                &env.receiver.url(&format!("/{tag}/{i}")),
                &["CLIENT_CREATED"],
            )
            .await?;
    }
    Ok(())
}

/// Waits until `expected` unique deliveries under `/<tag>/` arrived after the first `before`
/// requests (or nothing arrived for `patience`), then returns every request since `before`.
/// Unlike [`wait_for`], duplicates do not count towards `expected`: after a kill, the
/// deliveries the killed process had sent come again beside those it had not, and a count of
/// requests reaches `expected` before the last of the latter arrives.
pub async fn wait_for_unique(
    env: &Environment,
    before: usize,
    tag: &str,
    expected: usize,
    patience: Duration,
) -> Vec<Received> {
    let mut received = wait_for(env, before, expected, patience).await;
    let mut last_progress = (received.len(), Instant::now());
    while tagged(&received, tag).unique < expected && last_progress.1.elapsed() <= patience {
        tokio::time::sleep(Duration::from_millis(500)).await;
        received = env.receiver.received_from(before);
        if received.len() != last_progress.0 {
            last_progress = (received.len(), Instant::now());
        }
    }
    received
}

/// Waits until `expected` more requests arrived after the first `before` (or nothing arrived
/// for `patience`), then returns those that did.
pub async fn wait_for(
    env: &Environment,
    before: usize,
    expected: usize,
    patience: Duration,
) -> Vec<Received> {
    let mut last_count = env.receiver.count();
    let mut last_progress = Instant::now();
    while !env
        .receiver
        .wait_for(before + expected, Duration::from_secs(1))
        .await
    {
        let count = env.receiver.count();
        if count != last_count {
            last_count = count;
            last_progress = Instant::now();
        } else if last_progress.elapsed() > patience {
            break;
        }
    }
    // Duplicates, if any, arrive after the expected count: give them a moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    env.receiver.received_from(before)
}
