//! Process and database faults: `kill -9` of a server in the middle of a burst with a second
//! server beside it, and the database stopped under load (a fast shutdown, and an immediate stop
//! in the middle of a delivery burst, as in a crash). Nothing committed may be lost.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};
use timetrack_testkit::{Behaviour, HttpsReceiver, Received};

use crate::env::{Db, Env, arrivals, arrivals_by_path, arrived, create_clients, held_by_lease};
use crate::scenario::{Scenario, percentile, say};

/// Deliveries held by a worker: sent or being sent, their outcome not yet written.
pub(crate) const LEASED: &str = "SELECT count(*) FROM deliveries d WHERE d.status = 'PENDING' AND EXISTS \
     (SELECT 1 FROM delivery_leases l WHERE l.delivery_id = d.id AND l.expires_at > now())";

/// Polls `condition` every 20 ms until it holds or `timeout` passes; whether it held.
pub(crate) async fn wait_until(
    timeout: Duration,
    mut condition: impl AsyncFnMut() -> bool,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the receiver holds `expected` distinct deliveries (or `timeout` passes); the
/// distinct deliveries and the extra copies then.
pub(crate) async fn drain(
    receiver: &HttpsReceiver,
    expected: usize,
    timeout: Duration,
) -> (usize, usize) {
    let deadline = Instant::now() + timeout;
    loop {
        // Counting distinct ids copies every request; only do it once enough have arrived.
        if receiver.count() >= expected || Instant::now() > deadline {
            let (unique, duplicates) = arrivals(&receiver.received());
            if unique >= expected || Instant::now() > deadline {
                return (unique, duplicates);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// When the last delivery first arrived.
fn last_first_arrival(received: &[Received]) -> Option<Instant> {
    let mut first: HashMap<(&str, &str), Instant> = HashMap::new();
    for r in received {
        let key = (r.path.as_str(), r.header("webhook-id").unwrap_or(""));
        first
            .entry(key)
            .and_modify(|at| *at = (*at).min(r.at))
            .or_insert(r.at);
    }
    first.into_values().max()
}

/// Scenario 1: a burst of events over many subscriptions, one server killed with `kill -9`
/// several times (and restarted) while a second one runs beside it.
pub async fn process_faults(env: &mut Env, s: &mut Scenario) -> Result<()> {
    let (events, subscriptions, kills) = if env.quick {
        (400, 5, 2)
    } else {
        (10_000, 50, 3)
    };
    let url = env.database("faults").await?;
    let receiver = HttpsReceiver::start().await;
    let account = env.account(&url, "Faults").await?;
    let command_a = env.serve(&url, &receiver, "faults-a")?;
    let mut a = command_a.start().await?;
    let mut b = env.serve(&url, &receiver, "faults-b")?.start().await?;
    for i in 0..subscriptions {
        let target = receiver.url(&format!("/faults/{i}"));
        a.subscribe(&account.key, &target, &["CLIENT_CREATED"])
            .await?;
    }
    let db = Db::connect(&url).await?;
    say(&format!(
        "  {events} events × {subscriptions} subscriptions, {kills} kills"
    ));

    let started = Instant::now();
    let bases = Arc::new(Mutex::new(vec![a.base.clone(), b.base.clone()]));
    let load = {
        let (bases, key) = (bases.clone(), account.key.clone());
        tokio::spawn(async move { create_clients(bases, &key, "Burst", events, 16).await })
    };

    // The first kill lands in the middle of the burst, the others while the queue drains.
    let estimate = events * subscriptions;
    let mut leased_at_kills = Vec::new();
    for k in 0..kills {
        let reached = if k == 0 {
            wait_until(Duration::from_secs(300), async || {
                db.count("SELECT count(*) FROM events")
                    .await
                    .is_ok_and(|n| n >= i64::try_from(events / 2).unwrap_or(i64::MAX))
            })
            .await
        } else {
            let mark = estimate * k / kills;
            wait_until(Duration::from_secs(900), async || receiver.count() >= mark).await
        };
        if !reached {
            s.check(
                format!("kill {} happens", k + 1),
                false,
                "its moment never came",
            );
            break;
        }
        a.kill9();
        // The dead process's leases stay until they expire: these are what may arrive twice.
        let leased = db.count(LEASED).await?;
        leased_at_kills.push(leased);
        say(&format!(
            "  kill -9 #{} at {:.1} s: {leased} deliveries leased, {} requests received",
            k + 1,
            started.elapsed().as_secs_f64(),
            receiver.count()
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
        a = command_a.start().await?;
    }
    let accepted = load.await.context("the load generator")?;
    let load_done = Instant::now();
    let event_count = usize::try_from(db.count("SELECT count(*) FROM events").await?)?;
    let fanned_out = usize::try_from(db.count("SELECT count(*) FROM deliveries").await?)?;
    let expected = event_count * subscriptions;
    let timeout = Duration::from_secs(if env.quick { 120 } else { 900 });
    let (delivered, duplicates) = drain(&receiver, expected, timeout).await;
    let received = receiver.received();
    let drained_in = last_first_arrival(&received).map_or(0.0, |at| {
        at.saturating_duration_since(load_done).as_secs_f64()
    });
    let lost = expected.saturating_sub(delivered);
    let bound: i64 = leased_at_kills.iter().sum();

    s.figure(
        "events requested / accepted",
        format!("{events} / {accepted}"),
    );
    s.figure("events recorded", event_count);
    s.figure("subscriptions", subscriptions);
    s.figure(
        "kill -9 of server A (restarted each time)",
        leased_at_kills.len(),
    );
    s.figure(
        "deliveries leased at each kill",
        format!("{leased_at_kills:?}"),
    );
    s.figure("deliveries expected", expected);
    s.figure("delivered (distinct)", delivered);
    s.figure("lost", lost);
    s.figure("duplicates", duplicates);
    s.figure(
        "burst accepted in",
        format!("{:.1} s", (load_done - started).as_secs_f64()),
    );
    s.figure(
        "time to drain after the burst",
        format!("{drained_in:.1} s"),
    );
    s.figure("total", format!("{:.1} s", started.elapsed().as_secs_f64()));

    s.check_eq("every requested event was accepted", accepted, events);
    s.check_eq(
        "each event has one delivery per subscription",
        fanned_out,
        expected,
    );
    s.check_eq("kills made", leased_at_kills.len(), kills);
    s.check_eq("lost deliveries", lost, 0);
    s.check(
        "duplicates at most the deliveries leased at the kills",
        i64::try_from(duplicates)? <= bound,
        format!("{duplicates} duplicates, bound {bound}"),
    );
    let per_path = arrivals_by_path(&received);
    let short: Vec<_> = (0..subscriptions)
        .filter(|i| {
            per_path
                .get(&format!("/faults/{i}"))
                .is_none_or(|(u, _)| *u != event_count)
        })
        .collect();
    s.check(
        "every subscription got every event",
        short.is_empty(),
        if short.is_empty() {
            format!("{subscriptions} × {event_count}")
        } else {
            format!("short: {short:?}")
        },
    );
    s.check(
        "the second server ran throughout",
        b.exited().is_none(),
        format!("{:?}", b.exited()),
    );
    Ok(())
}

/// One request of the load during the outage and failover scenarios.
pub(crate) struct Sample {
    /// Sent, from the scenario's start.
    pub(crate) at: Duration,
    pub(crate) latency: Duration,
    /// 0 when no answer came.
    pub(crate) status: u16,
    pub(crate) body: Value,
}

/// Sends `make(n)` every `period` until stopped; records each answer.
pub(crate) fn sampler(
    http: reqwest::Client,
    start: Instant,
    period: Duration,
    make: impl Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder + Send + 'static,
) -> (Arc<Mutex<Vec<Sample>>>, tokio::task::JoinHandle<()>) {
    let samples = Arc::new(Mutex::new(Vec::new()));
    let out = samples.clone();
    let task = tokio::spawn(async move {
        let mut n = 0;
        let mut ticks = tokio::time::interval(period);
        loop {
            ticks.tick().await;
            n += 1;
            let request = make(&http, n);
            let samples = samples.clone();
            // Each request on its own task, so one that hangs cannot hold the others back.
            tokio::spawn(async move {
                let at = start.elapsed();
                let sent = Instant::now();
                let (status, body) = match request.send().await {
                    Ok(res) => {
                        let status = res.status().as_u16();
                        (status, res.json().await.unwrap_or(Value::Null))
                    }
                    // No answer: the client's error, so a failed check says why.
                    Err(err) => {
                        let mut why = err.to_string();
                        let mut source = std::error::Error::source(&err);
                        while let Some(cause) = source {
                            why = format!("{why}: {cause}");
                            source = cause.source();
                        }
                        (0, Value::String(why))
                    }
                };
                let sample = Sample {
                    at,
                    latency: sent.elapsed(),
                    status,
                    body,
                };
                samples
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(sample);
            });
        }
    });
    (out, task)
}

/// How the database goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// PostgreSQL's fast shutdown: open transactions rolled back, a checkpoint, then exit.
    Fast,
    /// `pg_ctl stop -m immediate`: every process exits at once, as in a crash; the restart runs
    /// crash recovery, and what asynchronous commits had not yet flushed is gone.
    Immediate,
}

/// Scenario 2: the database stopped (fast shutdown) for a while under load, then started again.
pub async fn database_outage(env: &mut Env, s: &mut Scenario) -> Result<()> {
    outage(env, s, Stop::Fast).await
}

/// Scenario 2b: the database crashed (immediate stop) in the middle of a delivery burst, then
/// started again: the same promises as the fast outage.
pub async fn database_crash(env: &mut Env, s: &mut Scenario) -> Result<()> {
    outage(env, s, Stop::Immediate).await
}

/// The database stopped as `stop` says under load (and, for a crash, in the middle of a burst of
/// deliveries to more subscribers), then started again; health, other endpoints, lost and
/// duplicated deliveries checked.
async fn outage(env: &mut Env, s: &mut Scenario, stop: Stop) -> Result<()> {
    let (name, outage, burst, burst_subscribers) = match stop {
        Stop::Fast => ("outage", if env.quick { 6 } else { 20 }, 0, 0),
        Stop::Immediate => (
            "crash",
            if env.quick { 4 } else { 20 },
            if env.quick { 150 } else { 1_000 },
            if env.quick { 3 } else { 10 },
        ),
    };
    let outage = Duration::from_secs(outage);
    let url = env.database(name).await?;
    let receiver = HttpsReceiver::start().await;
    let flaky = format!("/{name}/flaky");
    // One subscriber fails until the database is back, so retries are pending across the outage.
    receiver.respond(&flaky, Behaviour::Respond(503, vec![]));
    let account = env
        .account(
            &url,
            if stop == Stop::Fast {
                "Outage"
            } else {
                "Crash"
            },
        )
        .await?;
    let mut server = env
        .serve(&url, &receiver, name)?
        .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", vec!["2s"; 30].join(","))
        .start()
        .await?;
    let mut paths = vec![format!("/{name}/ok"), flaky.clone()];
    paths.extend((0..burst_subscribers).map(|i| format!("/{name}/burst/{i}")));
    let mut path_of: HashMap<String, String> = HashMap::new();
    for path in &paths {
        let (id, _) = server
            .subscribe(&account.key, &receiver.url(path), &["CLIENT_CREATED"])
            .await?;
        path_of.insert(id, path.clone());
    }
    // A crash leaves the deliveries whose lease was flushed to disk held until the lease
    // expires (60 s at least) before they are sent again. A quick run does not wait for that:
    // it checks that each undelivered one is still held by such a lease. A full run waits.
    let wait_for_leases = !(env.quick && stop == Stop::Immediate);
    let (settle, in_flight, drain_limit) = if wait_for_leases {
        (3, 4, 90)
    } else {
        (2, 2, 15)
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()?;
    let start = Instant::now();
    let (base, key) = (server.base.clone(), account.key.clone());
    let prefix = if stop == Stop::Fast {
        "Outage"
    } else {
        "Crash"
    };
    let (load, load_task) = sampler(
        http.clone(),
        start,
        Duration::from_millis(50),
        move |h, n| {
            h.post(format!("{base}/api/clients"))
                .bearer_auth(&key)
                .json(&json!({"name": format!("{prefix} client {n}")}))
        },
    );
    let base = server.base.clone();
    let (health, health_task) = sampler(http, start, Duration::from_millis(100), move |h, _| {
        h.get(format!("{base}/api/health"))
    });

    tokio::time::sleep(Duration::from_secs(3)).await;
    let db = Db::connect(&url).await?;
    let mut burst_task = None;
    if burst > 0 {
        // The crash lands in the middle of a burst: a third of it recorded, deliveries in flight.
        let bases = Arc::new(Mutex::new(vec![server.base.clone()]));
        let key = account.key.clone();
        burst_task = Some(tokio::spawn(async move {
            create_clients(bases, &key, "Crash burst", burst, 8).await
        }));
        let mark = db.count("SELECT count(*) FROM events").await? + i64::try_from(burst / 3)?;
        wait_until(Duration::from_secs(60), async || {
            db.count("SELECT count(*) FROM events")
                .await
                .is_ok_and(|n| n >= mark)
        })
        .await;
    }
    let before = db.count("SELECT count(*) FROM events").await?;
    // What is in flight now may arrive twice: sends whose outcome the outage keeps from being
    // written (or, in a crash, whose claim or outcome was not flushed yet).
    let leased_before = db.count(LEASED).await?;
    drop(db);
    let stop_at = start.elapsed();
    let stop_instant = Instant::now();
    match stop {
        Stop::Fast => env.stop_database().await,
        Stop::Immediate => env.crash_database().await?,
    }
    let stopped_at = start.elapsed();
    say(&format!(
        "  database {} at {:.1} s ({:.1} s to shut down), {before} events before, {leased_before} deliveries leased",
        if stop == Stop::Fast {
            "stopped"
        } else {
            "crashed (immediate stop)"
        },
        stop_at.as_secs_f64(),
        (stopped_at - stop_at).as_secs_f64()
    ));
    tokio::time::sleep(outage).await;
    // The database accepts connections a little before `start_database` returns: the outage
    // window ends when the restart begins, recovery is timed from when it has finished.
    let restarting_at = start.elapsed();
    env.start_database().await?;
    let back_at = start.elapsed();
    let back_instant = Instant::now();
    say(&format!(
        "  database back at {:.1} s",
        back_at.as_secs_f64()
    ));
    let healthy_again = wait_until(Duration::from_secs(30), async || {
        let samples = health.lock().unwrap_or_else(|e| e.into_inner());
        samples.iter().any(|x| x.at >= back_at && x.status == 200)
    })
    .await;
    let burst_accepted = match burst_task {
        Some(task) => task.await.context("the burst")?,
        None => 0,
    };
    tokio::time::sleep(Duration::from_secs(settle)).await;
    load_task.abort();
    health_task.abort();
    // Let answers still on their way come in.
    tokio::time::sleep(Duration::from_secs(in_flight)).await;
    receiver.respond(&flaky, Behaviour::Respond(200, vec![]));

    let db = Db::connect(&url).await?;
    let events = usize::try_from(db.count("SELECT count(*) FROM events").await?)?;
    let expected = events * paths.len();
    let (delivered, _) = drain(&receiver, expected, Duration::from_secs(drain_limit)).await;
    // Each delivery row not yet received: held by a live lease (it is sent again when the lease
    // expires), or lost. Expected deliveries without a row at all are lost too.
    let arrived = arrived(&receiver.received());
    let held = held_by_lease(&db, &path_of, &arrived).await?;
    let lost = expected.saturating_sub(delivered + held);
    // Duplicates among the subscribers that always answer 2xx (the failing one's retries are
    // not duplicates), and what bounds them: what was leased at the stop, and every request
    // those subscribers received from a second before the stop until the database was back.
    let received: Vec<Received> = receiver
        .received()
        .into_iter()
        .filter(|r| r.path != flaky)
        .collect();
    let (_, duplicates) = arrivals(&received);
    let around_stop = received
        .iter()
        .filter(|r| r.at + Duration::from_secs(1) >= stop_instant && r.at <= back_instant)
        .count();
    let bound = usize::try_from(leased_before)? + around_stop;

    let load = std::mem::take(&mut *load.lock().unwrap_or_else(|e| e.into_inner()));
    let health = std::mem::take(&mut *health.lock().unwrap_or_else(|e| e.into_inner()));
    let down = |x: &&Sample| x.at >= stopped_at && x.at + x.latency <= restarting_at;
    let during: Vec<&Sample> = load.iter().filter(down).collect();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for x in &during {
        *statuses.entry(x.status).or_default() += 1;
    }
    let latencies: Vec<f64> = during.iter().map(|x| x.latency.as_secs_f64()).collect();
    let health_down: Vec<&Sample> = health.iter().filter(down).collect();
    let first_503 = health
        .iter()
        .filter(|x| x.at >= stop_at && x.status == 503)
        .map(|x| (x.at + x.latency).saturating_sub(stop_at))
        .min();
    let first_200 = health
        .iter()
        .filter(|x| x.at >= back_at && x.status == 200)
        .map(|x| (x.at + x.latency).saturating_sub(back_at))
        .min();
    let health_worst = health_down
        .iter()
        .map(|x| x.latency)
        .max()
        .unwrap_or_default();
    let others_in_whole_run: Vec<&Sample> = load
        .iter()
        .filter(|x| ![201, 503].contains(&x.status))
        .collect();

    s.figure("outage", format!("{} s", outage.as_secs()));
    s.figure(
        "requests answered while the database was down",
        format!("{} ({statuses:?})", during.len()),
    );
    s.figure(
        "their latency p50 / max",
        format!(
            "{:.0} / {:.0} ms",
            percentile(&latencies, 50.0) * 1e3,
            percentile(&latencies, 100.0) * 1e3
        ),
    );
    s.figure(
        "health: first 503 after the stop",
        first_503.map_or("none".to_owned(), |d| format!("{:.2} s", d.as_secs_f64())),
    );
    s.figure(
        "health: slowest answer while down",
        format!("{:.2} s", health_worst.as_secs_f64()),
    );
    s.figure(
        "health: first 200 after the restart",
        first_200.map_or("none".to_owned(), |d| format!("{:.2} s", d.as_secs_f64())),
    );
    s.figure(
        "events before the outage / in all",
        format!("{before} / {events}"),
    );
    s.figure(
        "deliveries expected / delivered",
        format!("{expected} / {delivered}"),
    );
    s.figure("lost", lost);
    if !wait_for_leases {
        s.figure(
            format!("held by a lease from before the crash after {drain_limit} s (not waited for in a quick run)"),
            held,
        );
    }
    if burst > 0 {
        s.figure(
            "burst: clients requested / accepted, subscribers",
            format!("{burst} / {burst_accepted}, {}", paths.len()),
        );
    }
    s.figure("deliveries leased at the stop", leased_before);
    s.figure(
        "duplicates at the healthy subscribers / bound",
        format!("{duplicates} / {bound}"),
    );

    s.check(
        "health answers 503 within 3 s of the stop",
        first_503.is_some_and(|d| d <= Duration::from_secs(3)),
        format!("{first_503:?}"),
    );
    s.check(
        "every health answer while down is 503 unhealthy, within 3 s",
        !health_down.is_empty()
            && health_down.iter().all(|x| {
                x.status == 503
                    && x.body["status"] == "unhealthy"
                    && x.latency <= Duration::from_secs(3)
            }),
        format!(
            "{} answers, slowest {:.2} s",
            health_down.len(),
            health_worst.as_secs_f64()
        ),
    );
    s.check(
        "health answers 200 within 5 s of the restart",
        healthy_again && first_200.is_some_and(|d| d <= Duration::from_secs(5)),
        format!("{first_200:?}"),
    );
    s.check(
        "other endpoints answer JSON 503 Service unavailable while down, within 3 s",
        !during.is_empty()
            && during.iter().all(|x| {
                x.status == 503
                    && x.body == json!({"error": "Service unavailable"})
                    && x.latency <= Duration::from_secs(3)
            }),
        format!(
            "{} requests, statuses {statuses:?}, slowest {:.2} s",
            during.len(),
            percentile(&latencies, 100.0)
        ),
    );
    s.check(
        "no answer other than 201 or 503, and none missing, in the whole run",
        others_in_whole_run.is_empty(),
        format!(
            "{} of {}: {:?}",
            others_in_whole_run.len(),
            load.len(),
            others_in_whole_run
                .iter()
                .take(3)
                .map(|x| (x.status, x.body.to_string()))
                .collect::<Vec<_>>()
        ),
    );
    s.check(
        "the server did not exit",
        server.exited().is_none(),
        format!("{:?}", server.exited()),
    );
    s.check(
        "events were committed before the outage",
        before > 0,
        before.to_string(),
    );
    if wait_for_leases {
        s.check(
            format!(
                "lost deliveries (every committed event delivered to all {} subscribers)",
                paths.len()
            ),
            lost == 0 && held == 0,
            format!("{lost} lost, {held} still held by a lease"),
        );
    } else {
        s.check(
            format!(
                "lost deliveries (every committed event delivered to all {} subscribers, or held by a lease from before the crash, sent again when it expires)",
                paths.len()
            ),
            lost == 0,
            format!("{lost} lost; {delivered} delivered, {held} held by a lease"),
        );
    }
    s.check(
        "duplicates at most what was leased at the stop plus what arrived from 1 s before it until the restart",
        duplicates <= bound,
        format!("{duplicates} duplicates, bound {bound} ({leased_before} leased + {around_stop} received)"),
    );
    Ok(())
}
