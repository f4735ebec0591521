//! What ordering and filters cost delivery, each against the same run without them:
//!
//! - ordering: timers started and stopped on [`Sizes::ordering_entities`] time entries (two
//!   events of one entity each: the stop's delivery waits for the start's), against as many
//!   manual entries (every event its own entity), at [`ORDERED_SUBSCRIPTIONS`] subscriptions;
//! - filter fan-out: manual entries on one project, to a workspace of [`FILTERED`] subscriptions
//!   each filtered on its own project (one matches), against a workspace with one unfiltered
//!   subscription.
//!
//! Each burst comes from [`PUBLISHERS`] users of the workspace at once (a user runs one timer at
//! a time), each sending its share one request after another.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::delivery::{tagged, wait_for, workspace};
use crate::setup::{Account, Environment, Server};
use crate::stats::Repeated;
use crate::{Sizes, progress};

/// Users publishing at once.
pub const PUBLISHERS: usize = 16;

/// Subscriptions of the ordering workload.
pub const ORDERED_SUBSCRIPTIONS: usize = 10;

/// Subscriptions of the filtered workspace (the most a workspace may have active).
pub const FILTERED: usize = 100;

/// How long a burst waits for the next delivery before it counts the rest as lost.
const PATIENCE: Duration = Duration::from_secs(30);

/// One side of a comparison.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// Events accepted per second, over the burst.
    pub events_per_s: Repeated,
    /// Unique deliveries per second, from the first request to the last arrival.
    pub deliveries_per_s: Repeated,
    /// Events delivered per second, from the first request to the last arrival.
    pub delivered_events_per_s: Repeated,
    pub lost: usize,
    pub duplicates: usize,
}

/// What the workloads measured.
#[derive(Debug, Clone, Default)]
pub struct Fanout {
    pub entities: usize,
    pub events: usize,
    /// Start/stop pairs, and the same number of events about as many entities.
    pub ordered: Side,
    pub unrelated: Side,
    /// One matching subscription among [`FILTERED`] filtered ones, and one unfiltered.
    pub filtered: Side,
    pub unfiltered: Side,
}

impl Fanout {
    /// Ordered deliveries/s over unrelated ones (medians).
    pub fn ordering_ratio(&self) -> f64 {
        self.ordered.deliveries_per_s.median() / self.unrelated.deliveries_per_s.median().max(1e-9)
    }

    /// Filtered events delivered/s over unfiltered ones (medians).
    pub fn filter_ratio(&self) -> f64 {
        self.filtered.delivered_events_per_s.median()
            / self.unfiltered.delivered_events_per_s.median().max(1e-9)
    }
}

/// The workloads, `sizes.runs` times each, sides alternating.
pub async fn measure(env: &Environment, server: &Server, sizes: Sizes) -> Result<Fanout> {
    let mut figures = Fanout {
        entities: sizes.ordering_entities,
        events: sizes.fanout_events,
        ..Fanout::default()
    };
    let pairs = sizes.ordering_entities;
    let manual = |entries, subscriptions, filtered| Shape::Manual {
        entries,
        subscriptions,
        filtered,
    };
    for run in 0..sizes.runs {
        let sides = [
            ("ordered", Shape::Pairs(pairs), &mut figures.ordered),
            (
                "unrelated",
                manual(2 * pairs, ORDERED_SUBSCRIPTIONS, false),
                &mut figures.unrelated,
            ),
            (
                "filtered",
                manual(sizes.fanout_events, FILTERED, true),
                &mut figures.filtered,
            ),
            (
                "unfiltered",
                manual(sizes.fanout_events, 1, false),
                &mut figures.unfiltered,
            ),
        ];
        for (name, shape, side) in sides {
            let outcome = burst(env, server, &format!("{name}-{run}"), shape).await?;
            record(side, &outcome, name, run);
            env.settle().await?;
        }
    }
    Ok(figures)
}

/// What a burst publishes, and to which subscriptions.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A timer started then stopped on each of this many entries ([`ORDERED_SUBSCRIPTIONS`]
    /// subscriptions to both events).
    Pairs(usize),
    /// This many manual entries on the workspace's first project; `subscriptions` to
    /// TIME_ENTRY_CREATED, each filtered on its own project (the first matches) or none.
    Manual {
        entries: usize,
        subscriptions: usize,
        filtered: bool,
    },
}

impl Shape {
    /// The items the publishers share out (an item is one or two requests).
    fn items(self) -> usize {
        match self {
            Shape::Pairs(pairs) => pairs,
            Shape::Manual { entries, .. } => entries,
        }
    }

    /// The requests, each one event.
    fn events(self) -> usize {
        match self {
            Shape::Pairs(pairs) => 2 * pairs,
            Shape::Manual { entries, .. } => entries,
        }
    }
}

/// One burst's outcome.
struct Burst {
    events: usize,
    events_per_s: f64,
    deliveries_per_s: f64,
    delivered_events_per_s: f64,
    lost: usize,
    duplicates: usize,
}

fn record(side: &mut Side, burst: &Burst, name: &str, run: usize) {
    side.events_per_s.push(burst.events_per_s);
    side.deliveries_per_s.push(burst.deliveries_per_s);
    side.delivered_events_per_s
        .push(burst.delivered_events_per_s);
    side.lost += burst.lost;
    side.duplicates += burst.duplicates;
    progress(&format!(
        "{name} run {}: {} events accepted at {:.0}/s, {:.0} deliveries/s ({:.0} events \
         delivered/s), lost {}, duplicates {}",
        run + 1,
        burst.events,
        burst.events_per_s,
        burst.deliveries_per_s,
        burst.delivered_events_per_s,
        burst.lost,
        burst.duplicates
    ));
}

/// A workspace shaped by `shape` under a new tag, its burst, and what arrived.
async fn burst(env: &Environment, server: &Server, name: &str, shape: Shape) -> Result<Burst> {
    let (owner, tag) = workspace(env, name).await?;
    let (matching, project) = match shape {
        Shape::Pairs(_) => {
            for i in 0..ORDERED_SUBSCRIPTIONS {
                subscribe(
                    server,
                    &owner,
                    &env.receiver.url(&format!("/{tag}/{i}")),
                    &["TIMER_STARTED", "TIMER_STOPPED"],
                    None,
                )
                .await?;
            }
            (ORDERED_SUBSCRIPTIONS, None)
        }
        Shape::Manual {
            subscriptions,
            filtered,
            ..
        } => {
            let mut projects = Vec::new();
            for i in 0..subscriptions.max(1) {
                projects.push(create_project(server, &owner, &format!("{tag} project {i}")).await?);
            }
            for (i, project) in projects.iter().enumerate().take(subscriptions) {
                let filter = filtered.then(|| json!({"project_ids": [project]}));
                subscribe(
                    server,
                    &owner,
                    &env.receiver.url(&format!("/{tag}/{i}")),
                    &["TIME_ENTRY_CREATED"],
                    filter,
                )
                .await?;
            }
            (
                if filtered { 1 } else { subscriptions },
                Some(projects[0].clone()),
            )
        }
    };
    let mut keys = vec![owner.key.clone()];
    for _ in 1..PUBLISHERS {
        keys.push(env.account_in(&owner.workspace_id).await?.key);
    }
    let items = shape.items();
    let before = env.receiver.count();
    let next = Arc::new(AtomicUsize::new(0));
    let accepted = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let publishers: Vec<_> = keys
        .into_iter()
        .map(|key| {
            let (next, accepted) = (next.clone(), accepted.clone());
            let (http, base) = (server.http.clone(), server.base.clone());
            let project = project.clone();
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= items {
                        return;
                    }
                    for (path, body) in requests(shape, n, project.as_deref()) {
                        let res = http
                            .post(format!("{base}{path}"))
                            .bearer_auth(&key)
                            .json(&body)
                            .send()
                            .await;
                        if res.is_ok_and(|r| r.status().is_success()) {
                            accepted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for publisher in publishers {
        publisher.await?;
    }
    let accept_time = started.elapsed().as_secs_f64();
    let events = accepted.load(Ordering::Relaxed);
    let requested = shape.events();
    if events != requested {
        bail!("{name}: {events} of {requested} requests accepted");
    }
    let expected = events * matching;
    let received = wait_for(env, before, expected, PATIENCE).await;
    let mine = tagged(&received, &tag);
    let span = mine.span_since(started).max(1e-9);
    Ok(Burst {
        events,
        events_per_s: events as f64 / accept_time.max(1e-9),
        deliveries_per_s: mine.unique as f64 / span,
        delivered_events_per_s: mine.unique as f64 / matching as f64 / span,
        lost: expected.saturating_sub(mine.unique),
        duplicates: mine.duplicates(),
    })
}

/// The requests of item `n` of a burst of `shape`, sent one after another.
fn requests(shape: Shape, n: usize, project: Option<&str>) -> Vec<(&'static str, Value)> {
    match shape {
        Shape::Pairs(_) => vec![
            (
                "/api/time-entries/start",
                json!({"description": format!("ordered {n}")}),
            ),
            ("/api/time-entries/stop", json!({})),
        ],
        Shape::Manual { .. } => {
            // Distinct, past hours: entries may overlap, but keep them apart anyway.
            let start = time::OffsetDateTime::now_utc() - time::Duration::days(30)
                + time::Duration::minutes(i64::try_from(n).unwrap_or(0));
            let end = start + time::Duration::seconds(30);
            let rfc = |t: time::OffsetDateTime| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default()
            };
            vec![(
                "/api/time-entries",
                json!({
                    "start": rfc(start),
                    "end": rfc(end),
                    "description": format!("manual {n}"),
                    "project_id": project,
                }),
            )]
        }
    }
}

/// Subscribes `url` for `owner` to `events`, with `filters` if given.
async fn subscribe(
    server: &Server,
    owner: &Account,
    url: &str,
    events: &[&str],
    filters: Option<Value>,
) -> Result<()> {
    let mut body = json!({"url": url, "events": events});
    if let Some(filters) = filters {
        body["filters"] = filters;
    }
    let (status, answer) = server
        .post(
            &owner.key,
            "/api/integrations/automation/webhooks/subscribe",
            &body,
        )
        .await?;
    if status != 201 {
        bail!("subscribing {url} failed: {status} {answer}");
    }
    Ok(())
}

/// A new project of `owner`'s workspace named `name`; its id.
async fn create_project(server: &Server, owner: &Account, name: &str) -> Result<String> {
    let (status, body) = server
        .post(&owner.key, "/api/projects", &json!({ "name": name }))
        .await?;
    match body["id"].as_str() {
        Some(id) if status == 201 => Ok(id.to_owned()),
        _ => bail!("creating project {name} failed: {status} {body}"),
    }
}
