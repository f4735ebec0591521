//! Replay and the catch-up feed: a workspace with a large event history gets a new webhook,
//! which replays the whole history (`POST .../webhooks/{id}/replay`, `only_failed: false`, a
//! call per 10,000 events) while another workspace's live subscription takes a steady rate of
//! new events; then the history is read through the feed in pages of 1,000.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

use crate::delivery::{arrivals, publish_steady, subscribed, tagged, wait_for};
use crate::setup::{Environment, Server, connect};
use crate::stats::Repeated;
use crate::{Sizes, progress};

/// Events of each page of the feed read.
const FEED_PAGE: usize = 1_000;

/// What the workload measured.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// Events in the replayed history.
    pub events: usize,
    /// Seconds from the first replay call to the answer of the last (everything queued).
    pub queued_in_s: Repeated,
    /// Replayed deliveries per second, from the first call to the last arrival.
    pub delivered_per_s: Repeated,
    /// The live subscription's delivery latency meanwhile: p50 and p99, in milliseconds.
    pub live_p50: Repeated,
    pub live_p99: Repeated,
    /// Events per second read through the feed.
    pub feed_per_s: Repeated,
    /// Replayed or live deliveries never received, and events the feed did not return.
    pub lost: usize,
}

/// The workload, `sizes.runs` times.
pub async fn measure(env: &Environment, server: &Server, sizes: Sizes) -> Result<Replay> {
    let mut figures = Replay {
        events: sizes.replay_events,
        ..Replay::default()
    };
    for run in 0..sizes.runs {
        let (account, tag) = subscribed(env, server, 0, &format!("replay-{run}")).await?;
        history(env, &account.workspace_id, sizes.replay_events).await?;
        let (webhook, _) = server
            .subscribe(
                &account.key,
                &env.receiver.url(&format!("/{tag}/replay")),
                &["CLIENT_CREATED"],
            )
            .await?;
        let (live, live_tag) = subscribed(env, server, 1, &format!("replay-live-{run}")).await?;

        let before = env.receiver.count();
        let stop = AtomicBool::new(false);
        let sent = AtomicUsize::new(0);
        let started = Instant::now();
        let publisher = publish_steady(server, &live.key, &live_tag, sizes.latency_rate, |n| {
            sent.store(usize::try_from(n).unwrap_or(usize::MAX), Ordering::Relaxed);
            stop.load(Ordering::Relaxed)
        });
        let replay = async {
            let replayed =
                replay_and_wait(env, server, &account.key, &webhook, before, &sent).await;
            // The publisher ends whatever became of the replay.
            stop.store(true, Ordering::Relaxed);
            replayed
        };
        let (answered, replayed) = tokio::join!(publisher, replay);
        let (answered, (queued, queued_in, replay_started)) = (answered?, replayed?);
        if queued != sizes.replay_events {
            bail!(
                "the replay queued {queued} of {} events",
                sizes.replay_events
            );
        }
        let received = wait_for(
            env,
            before,
            queued + answered.len(),
            Duration::from_secs(30),
        )
        .await;

        // The replayed workspace's one webhook is the tag's one path.
        let replayed = tagged(&received, &tag);
        let delivered_per_s =
            replayed.unique as f64 / replayed.span_since(replay_started).max(1e-9);
        let live_arrivals = arrivals(&received, &live_tag, &answered, started);
        let (p50, p99) = (
            live_arrivals.samples.percentile(50.0),
            live_arrivals.samples.percentile(99.0),
        );

        let feed_started = Instant::now();
        let read = read_feed(server, &account.key).await?;
        let feed_per_s = read as f64 / feed_started.elapsed().as_secs_f64().max(1e-9);

        let lost = queued.saturating_sub(replayed.unique)
            + answered.len().saturating_sub(live_arrivals.unique)
            + sizes.replay_events.saturating_sub(read);
        progress(&format!(
            "replay run {}: {queued} events queued in {queued_in:.2} s, delivered at \
             {delivered_per_s:.0}/s; live subscription meanwhile p50 {p50:.2} ms, p99 {p99:.2} ms \
             ({} samples); feed read at {feed_per_s:.0} events/s; lost {lost}",
            run + 1,
            live_arrivals.samples.0.len()
        ));
        figures.queued_in_s.push(queued_in);
        figures.delivered_per_s.push(delivered_per_s);
        figures.live_p50.push(p50);
        figures.live_p99.push(p99);
        figures.feed_per_s.push(feed_per_s);
        figures.lost += lost;
        env.settle().await?;
    }
    Ok(figures)
}

/// After a second of live traffic alone, replays the history to `webhook` and waits until the
/// replayed deliveries and the live ones `sent` so far have arrived after the first `before`
/// (or nothing arrived for 30 s); returns how many were queued, in how many seconds, and when
/// the replay began.
async fn replay_and_wait(
    env: &Environment,
    server: &Server,
    key: &str,
    webhook: &str,
    before: usize,
    sent: &AtomicUsize,
) -> Result<(usize, f64, Instant)> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let replay_started = Instant::now();
    let queued = replay_all(server, key, webhook).await?;
    let queued_in = replay_started.elapsed().as_secs_f64();
    let (mut last_count, mut last_progress) = (0, Instant::now());
    loop {
        let count = env.receiver.count() - before;
        if count >= queued + sent.load(Ordering::Relaxed) {
            break;
        }
        if count != last_count {
            (last_count, last_progress) = (count, Instant::now());
        } else if last_progress.elapsed() > Duration::from_secs(30) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok((queued, queued_in, replay_started))
}

/// Writes `events` CLIENT_CREATED events of the last hour into `workspace`, as the service
/// records them (each its own ordering key).
async fn history(env: &Environment, workspace: &str, events: usize) -> Result<()> {
    let (client, driver) = connect(&env.database_url).await?;
    let events = i64::try_from(events)?;
    client
        .execute(
            "INSERT INTO events (id, workspace_id, event_type, body, created_at, client_id, \
                                 ordering_key) \
             SELECT x.id, $1::text::uuid, 'CLIENT_CREATED', \
                    json_build_object('id', x.client, 'name', 'Replayed client ' || x.n, \
                                      'type', 'COMPANY', 'status', 'ACTIVE', \
                                      'currency', 'USD')::text, \
                    now() - interval '1 hour' + x.n * (interval '50 minutes' / $2::bigint), \
                    x.client, x.client::text \
             FROM (SELECT n, gen_random_uuid() AS id, gen_random_uuid() AS client \
                   FROM generate_series(1, $2::bigint) AS n) AS x",
            &[&workspace, &events],
        )
        .await
        .context("writing the replayed history")?;
    client.batch_execute("ANALYZE events").await?;
    driver.abort();
    Ok(())
}

/// Replays everything of the last two hours to `webhook`, a call per 10,000 events; returns
/// how many were queued.
async fn replay_all(server: &Server, key: &str, webhook: &str) -> Result<usize> {
    let mut since =
        (time::OffsetDateTime::now_utc() - time::Duration::hours(2)).format(&Rfc3339)?;
    let mut queued = 0;
    loop {
        let (status, body) = server
            .post(
                key,
                &format!("/api/integrations/automation/webhooks/{webhook}/replay"),
                &json!({"since": since, "only_failed": false}),
            )
            .await?;
        if status != 202 {
            bail!("replay answered {status}: {body}");
        }
        queued += body["queued"].as_u64().unwrap_or(0) as usize;
        match (&body["truncated"], &body["next_since"]) {
            (Value::Bool(true), Value::String(next)) => since.clone_from(next),
            _ => return Ok(queued),
        }
    }
}

/// Reads the caller's whole feed in pages of [`FEED_PAGE`]; returns how many events it held.
async fn read_feed(server: &Server, key: &str) -> Result<usize> {
    let mut read = 0;
    let mut after = String::new();
    loop {
        let (status, body) = server
            .get(
                key,
                &format!("/api/integrations/automation/events?limit={FEED_PAGE}{after}"),
            )
            .await?;
        if status != 200 {
            bail!("the feed answered {status}: {body}");
        }
        let page = body["data"].as_array().map_or(0, Vec::len);
        read += page;
        match &body["next_cursor"] {
            Value::String(cursor) if page == FEED_PAGE => after = format!("&after={cursor}"),
            _ => return Ok(read),
        }
    }
}
