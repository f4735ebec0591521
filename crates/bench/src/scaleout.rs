//! Scale-out: the throughput burst at S = 10 sent through one `serve` process, then through two
//! and four on the same database (each publisher keeps to one of them), then through two of which
//! one is killed (SIGKILL) halfway through the burst, its publishers moving to the other. Every
//! repetition measures the four side by side, each in a new workspace.
//!
//! Beside deliveries/s, each burst with 1, 2 and 4 processes reports the database's CPU per
//! delivery and how long claims wait for locks: `pg_stat_activity` is sampled every 10 ms while
//! the burst runs, and each sample's backends waiting on a lock (`wait_event_type = 'Lock'`),
//! and of those on an advisory lock (the claim lock of ADR 0019, the only advisory lock the
//! burst takes), count 10 ms of waiting each. The sampler's own queries are in the database's
//! CPU (about 100 small queries a second).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use crate::delivery::{subscribed, tagged, wait_for_unique};
use crate::setup::{Environment, Server, connect};
use crate::stats::Repeated;
use crate::{Options, Sizes, progress};

/// Subscriptions of the workload.
pub const SUBSCRIPTIONS: usize = 10;

/// What the workload measured.
#[derive(Debug, Clone, Default)]
pub struct ScaleOut {
    /// Unique deliveries per second through one process.
    pub one: Repeated,
    /// The same through two processes.
    pub two: Repeated,
    /// The same through four processes.
    pub four: Repeated,
    /// PostgreSQL's CPU per delivery through 1, 2 and 4 processes, µs.
    pub database_us: [Repeated; 3],
    /// Time backends spent waiting for the claim lock (advisory) per delivery, through 1, 2 and
    /// 4 processes, µs (sampled).
    pub claim_wait_us: [Repeated; 3],
    /// The same for any lock.
    pub lock_wait_us: [Repeated; 3],
    /// Deliveries expected and never received, and received more than once, through one
    /// process and through two (summed over the repetitions).
    pub one_lost: usize,
    pub one_duplicates: usize,
    pub two_lost: usize,
    pub two_duplicates: usize,
    pub four_lost: usize,
    pub four_duplicates: usize,
    /// Deliveries never received in the runs with a kill.
    pub killed_lost: usize,
    /// Deliveries received more than once in the runs with a kill.
    pub killed_duplicates: usize,
    /// Deliveries leased (in flight) by any process at the moment of each kill, summed: what a
    /// kill may deliver twice, as the killed process may have sent them without recording it.
    pub leased_at_kill: usize,
}

impl ScaleOut {
    /// Two processes' deliveries/s over one's (medians).
    pub fn ratio(&self) -> f64 {
        self.two.median() / self.one.median().max(1e-9)
    }

    /// Four processes' deliveries/s over one's (medians).
    pub fn ratio_four(&self) -> f64 {
        self.four.median() / self.one.median().max(1e-9)
    }
}

/// One burst's outcome.
struct Burst {
    /// Seconds until every event was accepted, and until the last delivery arrived.
    accepted_after: f64,
    delivered_after: f64,
    deliveries_per_s: f64,
    lost: usize,
    duplicates: usize,
    leased_at_kill: usize,
    /// PostgreSQL's CPU per unique delivery, µs (0 when its server is not on this machine).
    database_us: f64,
    /// Sampled waits per unique delivery, µs: for the claim (advisory) lock, for any lock.
    claim_wait_us: f64,
    lock_wait_us: f64,
}

/// The workload: `server` is the first process; the second is started for each burst that
/// needs it.
pub async fn measure(
    env: &Environment,
    server: &Server,
    sizes: Sizes,
    options: &Options,
) -> Result<ScaleOut> {
    let mut figures = ScaleOut::default();
    for run in 0..sizes.runs {
        let one = burst(env, &[server], None, sizes, &format!("scale1-{run}")).await?;
        env.settle().await?;
        let second = env.start_server(options).await?;
        let two = burst(
            env,
            &[server, &second],
            None,
            sizes,
            &format!("scale2-{run}"),
        )
        .await?;
        drop(second);
        env.settle().await?;
        let (b, c, d) = (
            env.start_server(options).await?,
            env.start_server(options).await?,
            env.start_server(options).await?,
        );
        let four = burst(
            env,
            &[server, &b, &c, &d],
            None,
            sizes,
            &format!("scale4-{run}"),
        )
        .await?;
        drop((b, c, d));
        env.settle().await?;
        let mut doomed = env.start_server(options).await?;
        let killed = burst(
            env,
            &[server],
            Some(&mut doomed),
            sizes,
            &format!("scalek-{run}"),
        )
        .await?;
        env.settle().await?;
        progress(&format!(
            "scale-out S={SUBSCRIPTIONS} run {}: one process {:.0} deliveries/s (accepted in \
             {:.1} s, delivered in {:.1} s), two {:.0} ({:.0} %; {:.1} s, {:.1} s), four {:.0} \
             ({:.0} %); database µs/delivery {:.0} / {:.0} / {:.0}, claim lock wait \
             µs/delivery {:.1} / {:.1} / {:.1}, any lock {:.1} / {:.1} / {:.1}; one of two \
             killed halfway: lost {}, duplicates {} ({} leased at the kill)",
            run + 1,
            one.deliveries_per_s,
            one.accepted_after,
            one.delivered_after,
            two.deliveries_per_s,
            100.0 * two.deliveries_per_s / one.deliveries_per_s.max(1e-9),
            two.accepted_after,
            two.delivered_after,
            four.deliveries_per_s,
            100.0 * four.deliveries_per_s / one.deliveries_per_s.max(1e-9),
            one.database_us,
            two.database_us,
            four.database_us,
            one.claim_wait_us,
            two.claim_wait_us,
            four.claim_wait_us,
            one.lock_wait_us,
            two.lock_wait_us,
            four.lock_wait_us,
            killed.lost,
            killed.duplicates,
            killed.leased_at_kill
        ));
        figures.one.push(one.deliveries_per_s);
        figures.two.push(two.deliveries_per_s);
        figures.four.push(four.deliveries_per_s);
        for (i, b) in [&one, &two, &four].into_iter().enumerate() {
            figures.database_us[i].push(b.database_us);
            figures.claim_wait_us[i].push(b.claim_wait_us);
            figures.lock_wait_us[i].push(b.lock_wait_us);
        }
        figures.four_lost += four.lost;
        figures.four_duplicates += four.duplicates;
        figures.one_lost += one.lost;
        figures.one_duplicates += one.duplicates;
        figures.two_lost += two.lost;
        figures.two_duplicates += two.duplicates;
        figures.killed_lost += killed.lost;
        figures.killed_duplicates += killed.duplicates;
        figures.leased_at_kill += killed.leased_at_kill;
    }
    Ok(figures)
}

/// A burst of `sizes.burst_events` client creations from `sizes.burst_clients` publishers
/// spread over `servers` and `doomed`; `doomed` is killed once half the events are taken, and
/// its publishers go on through the first server. An event counts as recorded when its client
/// exists in the database afterwards (a request cut by the kill may have committed).
async fn burst(
    env: &Environment,
    servers: &[&Server],
    mut doomed: Option<&mut Server>,
    sizes: Sizes,
    name: &str,
) -> Result<Burst> {
    let (account, tag) = subscribed(env, servers[0], SUBSCRIPTIONS, name).await?;
    let mut endpoints: Vec<_> = servers
        .iter()
        .map(|s| (s.http.clone(), s.base.clone()))
        .collect();
    if let Some(doomed) = doomed.as_deref() {
        endpoints.push((doomed.http.clone(), doomed.base.clone()));
    }
    let endpoints = Arc::new(endpoints);
    let before = env.receiver.count();
    let database_before = crate::cpu::database_us();
    let (stop_sampling, stopped) = tokio::sync::watch::channel(false);
    let sampler = tokio::spawn(sample_lock_waits(env.database_url.clone(), stopped));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let publishers: Vec<_> = (0..sizes.burst_clients)
        .map(|p| {
            let (next, endpoints, key, tag) = (
                next.clone(),
                endpoints.clone(),
                account.key.clone(),
                tag.clone(),
            );
            let events = sizes.burst_events;
            tokio::spawn(async move {
                let mut endpoint = p % endpoints.len();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= events {
                        return;
                    }
                    // A request that fails in transport (its server was killed) is sent again
                    // to the first server: a 409 then says the first one had committed it.
                    for _ in 0..2 {
                        let (http, base) = &endpoints[endpoint];
                        let sent = http
                            .post(format!("{base}/api/clients"))
                            .bearer_auth(&key)
                            .json(&json!({"name": format!("{tag} client {n}")}))
                            .send()
                            .await;
                        if sent.is_ok() {
                            break;
                        }
                        endpoint = 0;
                    }
                }
            })
        })
        .collect();
    let mut leased_at_kill = 0;
    if let Some(doomed) = doomed.as_deref_mut() {
        while next.load(Ordering::Relaxed) < sizes.burst_events / 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        doomed.kill9();
        leased_at_kill = leased(env).await?;
    }
    for publisher in publishers {
        publisher.await?;
    }
    let accepted_after = started.elapsed().as_secs_f64();
    let recorded = recorded(env, &account.workspace_id).await?;
    let expected = recorded * SUBSCRIPTIONS;
    // A killed process's leases come back when they expire (four times the request time-out,
    // at least 60 s), and until then hold its subscriptions' in-flight slots.
    let patience = if doomed.is_some() { 90 } else { 30 };
    let received =
        wait_for_unique(env, before, &tag, expected, Duration::from_secs(patience)).await;
    let _ = stop_sampling.send(true);
    let waits = sampler.await??;
    let database = crate::cpu::database_us().saturating_sub(database_before);
    let mine = tagged(&received, &tag);
    let span = mine.span_since(started);
    let per_delivery = |us: u64| us as f64 / mine.unique.max(1) as f64;
    Ok(Burst {
        accepted_after,
        delivered_after: span,
        deliveries_per_s: mine.unique as f64 / span.max(1e-9),
        lost: expected.saturating_sub(mine.unique),
        duplicates: mine.duplicates(),
        leased_at_kill,
        database_us: per_delivery(database),
        claim_wait_us: per_delivery(waits.advisory_us),
        lock_wait_us: per_delivery(waits.any_us),
    })
}

/// Lock waits sampled over a burst: backends found waiting, times the sampling interval.
#[derive(Debug, Default)]
struct LockWaits {
    /// On an advisory lock (the claim lock), µs.
    advisory_us: u64,
    /// On any lock, µs.
    any_us: u64,
}

/// How often [`sample_lock_waits`] looks.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// Samples `pg_stat_activity` of the bench database every [`SAMPLE_EVERY`] until `stop`.
async fn sample_lock_waits(
    url: String,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<LockWaits> {
    let (client, driver) = connect(&url).await?;
    let statement = client
        .prepare(
            "SELECT count(*) FILTER (WHERE wait_event = 'advisory'), count(*) \
             FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .await?;
    let step = u64::try_from(SAMPLE_EVERY.as_micros()).unwrap_or(u64::MAX);
    let mut waits = LockWaits::default();
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => break,
        }
        let row = client.query_one(&statement, &[]).await?;
        let advisory = u64::try_from(row.get::<_, i64>(0)).unwrap_or(0);
        let any = u64::try_from(row.get::<_, i64>(1)).unwrap_or(0);
        waits.advisory_us += advisory * step;
        waits.any_us += any * step;
    }
    drop(client);
    driver.abort();
    Ok(waits)
}

/// The clients of `workspace`: the events its burst recorded.
async fn recorded(env: &Environment, workspace: &str) -> Result<usize> {
    let (client, driver) = connect(&env.database_url).await?;
    let row = client
        .query_one(
            "SELECT count(*) FROM clients WHERE workspace_id = $1::text::uuid",
            &[&workspace],
        )
        .await
        .context("counting the burst's clients")?;
    driver.abort();
    Ok(usize::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// Deliveries leased by any process now.
async fn leased(env: &Environment) -> Result<usize> {
    let (client, driver) = connect(&env.database_url).await?;
    let row = client
        .query_one(
            "SELECT count(*) FROM deliveries d WHERE d.status = 'PENDING' AND EXISTS \
             (SELECT 1 FROM delivery_leases l \
              WHERE l.delivery_id = d.id AND l.expires_at > now())",
            &[],
        )
        .await
        .context("counting leased deliveries")?;
    driver.abort();
    Ok(usize::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}
