//! Hostile receivers: failures, silence, resets, redirects to a canary, `Retry-After`, `410`, a
//! slow subscriber beside a healthy one, an endless body, binary and compressed answers beside
//! another tenant, and a tenant whose endpoints all hang beside another. Each case has a
//! workspace of its own, so one case's deliveries never queue behind another's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use timetrack_testkit::{Account, Behaviour, HttpsReceiver, ServerProcess};

use crate::env::Env;
use crate::scenario::{Scenario, check_canary_untouched, percentile, say};

/// A workspace whose one subscription points at `path` of the receiver.
struct Case {
    account: Account,
    webhook: String,
    path: String,
}

impl Case {
    async fn new(
        env: &Env,
        url: &str,
        server: &ServerProcess,
        receiver: &HttpsReceiver,
        path: &str,
    ) -> Result<Self> {
        let account = env.account(url, &format!("Receiver {path}")).await?;
        let (webhook, _) = server
            .subscribe(&account.key, &receiver.url(path), &["CLIENT_CREATED"])
            .await?;
        Ok(Self {
            account,
            webhook,
            path: path.to_owned(),
        })
    }

    /// Creates a client (one event); its id.
    async fn event(&self, server: &ServerProcess) -> Result<String> {
        let name = format!("Client {}", uuid::Uuid::new_v4().simple());
        let (status, body) = server
            .post(&self.account.key, "/api/clients", &json!({"name": name}))
            .await?;
        if status != 201 {
            bail!("creating a client: {status} {body}");
        }
        Ok(body["id"].as_str().unwrap_or_default().to_owned())
    }

    /// The newest entry of the subscription's delivery log, `null` if none.
    async fn last_delivery(&self, server: &ServerProcess) -> Result<Value> {
        let path = format!(
            "/api/integrations/automation/webhooks/{}/deliveries",
            self.webhook
        );
        let (status, body) = server.get(&self.account.key, &path).await?;
        if status != 200 {
            bail!("delivery log of {}: {status} {body}", self.path);
        }
        Ok(body["data"][0].clone())
    }

    /// Waits until the newest delivery is `DELIVERED` or `FAILED`; that entry.
    async fn settled(&self, server: &ServerProcess, timeout: Duration) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = self.last_delivery(server).await?;
            if last["status"] == "DELIVERED" || last["status"] == "FAILED" {
                return Ok(last);
            }
            if Instant::now() > deadline {
                return Ok(last);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Whether the subscription is still in its workspace's listing.
    async fn listed(&self, server: &ServerProcess) -> Result<bool> {
        let (_, body) = server
            .get(&self.account.key, "/api/integrations/automation/webhooks")
            .await?;
        Ok(body["webhooks"]
            .as_array()
            .is_some_and(|w| w.iter().any(|x| x["id"] == self.webhook.as_str())))
    }
}

/// Arrival times at `path`, in order.
fn arrivals_at(receiver: &HttpsReceiver, path: &str) -> Vec<Instant> {
    receiver
        .received()
        .iter()
        .filter(|r| r.path == path)
        .map(|r| r.at)
        .collect()
}

/// Shortest gap between consecutive arrivals, if there are two.
fn shortest_gap(at: &[Instant]) -> Option<Duration> {
    at.windows(2).map(|w| w[1] - w[0]).min()
}

fn summary(entry: &Value) -> String {
    format!(
        "{} after {} attempt(s), last status {}, last error {}",
        entry["status"], entry["attempts"], entry["last_status_code"], entry["last_error"]
    )
}

pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("receivers").await?;
    let receiver = HttpsReceiver::start().await;
    let canary = HttpsReceiver::start().await;
    let server = env.serve(&url, &receiver, "receivers")?.start().await?;
    // Attempts: the first and three retries (1 s, 1 s, 2 s); each at most 3 s.
    let settle = Duration::from_secs(40);

    slow_beside_healthy(env, &url, &server, &receiver, s).await?;
    binary_answers(env, &url, &server, &receiver, s).await?;
    hanging_tenant(env, &url, &server, &receiver, s).await?;

    let behaviours: Vec<(&str, Behaviour)> = vec![
        ("/flaky", Behaviour::Sequence(vec![500, 500, 200])),
        ("/silent", Behaviour::Slow(Duration::from_secs(120), 200)),
        ("/reset", Behaviour::Reset),
        ("/endless", Behaviour::Endless),
        ("/gone", Behaviour::Respond(410, vec![])),
        (
            "/throttled-429",
            Behaviour::Respond(429, vec![("Retry-After".into(), "3".into())]),
        ),
        (
            "/throttled-503",
            Behaviour::Respond(503, vec![("Retry-After".into(), "3".into())]),
        ),
    ];
    let redirects = [301u16, 302, 303, 307, 308];
    let mut cases: HashMap<String, Case> = HashMap::new();
    for (path, behaviour) in behaviours {
        receiver.respond(path, behaviour);
        cases.insert(
            path.to_owned(),
            Case::new(env, &url, &server, &receiver, path).await?,
        );
    }
    for code in redirects {
        let path = format!("/redirect-{code}");
        let location = canary.url(&format!("/canary-{code}"));
        receiver.respond(
            &path,
            Behaviour::Respond(code, vec![("Location".into(), location)]),
        );
        cases.insert(
            path.clone(),
            Case::new(env, &url, &server, &receiver, &path).await?,
        );
    }
    for case in cases.values() {
        case.event(&server).await?;
    }
    say("  one event to each hostile receiver");
    let case = |path: &str| cases.get(path).context("a case of the table");

    // 500, 500, then 200: three attempts of one delivery, one webhook-id.
    let flaky = case("/flaky")?.settled(&server, settle).await?;
    let ids: Vec<String> = receiver
        .received()
        .iter()
        .filter(|r| r.path == "/flaky")
        .map(|r| r.header("webhook-id").unwrap_or_default().to_owned())
        .collect();
    s.check(
        "500, 500, 200: delivered on the third attempt with the same webhook-id",
        flaky["status"] == "DELIVERED"
            && flaky["attempts"] == 3
            && ids.len() == 3
            && ids.iter().all(|i| *i == ids[0]),
        format!("{}; ids {ids:?}", summary(&flaky)),
    );

    // Held until the time-out, the attempt would have failed as `timeout`.
    let endless = case("/endless")?.settled(&server, settle).await?;
    s.check(
        "an endless body: read capped, delivered on the first attempt (not held until the time-out)",
        endless["status"] == "DELIVERED" && endless["attempts"] == 1,
        summary(&endless),
    );

    // 410: the subscription ends at once; later events send nothing.
    let gone = case("/gone")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while gone.listed(&server).await? && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = gone.listed(&server).await?;
    for _ in 0..3 {
        gone.event(&server).await?;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let gone_hits = arrivals_at(&receiver, "/gone").len();
    s.check(
        "410: the subscription is removed and nothing more is sent (3 later events)",
        !listed && gone_hits == 1,
        format!("listed: {listed}, requests: {gone_hits}"),
    );

    for path in ["/throttled-429", "/throttled-503"] {
        let deadline = Instant::now() + Duration::from_secs(20);
        while arrivals_at(&receiver, path).len() < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let at = arrivals_at(&receiver, path);
        let gap = shortest_gap(&at);
        s.check(
            format!(
                "{} with Retry-After: 3: no attempt before it expires (schedule alone says 1 s)",
                &path[11..]
            ),
            at.len() >= 3 && gap.is_some_and(|g| g >= Duration::from_secs(3)),
            format!(
                "{} attempts, shortest gap {:.2} s",
                at.len(),
                gap.unwrap_or_default().as_secs_f64()
            ),
        );
    }

    let silent = case("/silent")?.settled(&server, settle).await?;
    s.check(
        "never answers: each attempt times out, retried, then FAILED",
        silent["status"] == "FAILED"
            && silent["attempts"] == 4
            && silent["last_error"]
                .as_str()
                .is_some_and(|e| e.starts_with("timeout")),
        summary(&silent),
    );

    let reset = case("/reset")?.settled(&server, settle).await?;
    s.check(
        "resets the connection: a failure without status, retried, then FAILED",
        reset["status"] == "FAILED"
            && reset["attempts"] == 4
            && reset["last_status_code"].is_null()
            && reset["last_error"].is_string(),
        summary(&reset),
    );

    for code in redirects {
        let entry = case(&format!("/redirect-{code}"))?
            .settled(&server, settle)
            .await?;
        s.check(
            format!("{code} to a loopback canary: a failure, the redirect not followed"),
            entry["status"] == "FAILED" && entry["last_status_code"] == code,
            summary(&entry),
        );
    }
    check_canary_untouched(s, &canary);
    let memory = server.memory()?;
    s.figure(
        "server peak RSS during the scenario",
        format!("{:.1} MB", memory.peak_mb()),
    );
    Ok(())
}

/// A subscriber that takes 2 s per request beside a healthy one in the same workspace: the
/// healthy one's latency is compared with a workspace that has only a healthy subscriber.
async fn slow_beside_healthy(
    env: &Env,
    url: &str,
    server: &ServerProcess,
    receiver: &HttpsReceiver,
    s: &mut Scenario,
) -> Result<()> {
    let events = if env.quick { 60 } else { 200 };
    receiver.respond("/slow", Behaviour::Slow(Duration::from_secs(2), 200));
    let alone = Case::new(env, url, server, receiver, "/alone").await?;
    let beside = Case::new(env, url, server, receiver, "/beside-slow").await?;
    server
        .subscribe(
            &beside.account.key,
            &receiver.url("/slow"),
            &["CLIENT_CREATED"],
        )
        .await?;

    // A warm-up, so that the baseline is not the server's first requests.
    latencies(server, receiver, &alone, 20).await?;
    let baseline = latencies(server, receiver, &alone, events).await?;
    let contended = latencies(server, receiver, &beside, events).await?;
    let slow_got = arrivals_at(receiver, "/slow").len();
    let (b50, b99) = (percentile(&baseline, 50.0), percentile(&baseline, 99.0));
    let (c50, c99) = (percentile(&contended, 50.0), percentile(&contended, 99.0));
    s.figure(
        "healthy subscriber alone: p50 / p99",
        format!("{b50:.1} / {b99:.1} ms ({events} events at 25/s)"),
    );
    s.figure(
        "healthy subscriber beside a 2 s one: p50 / p99",
        format!("{c50:.1} / {c99:.1} ms (the slow one got {slow_got} requests meanwhile)"),
    );
    s.check(
        "a slow subscriber leaves its healthy neighbour's latency as it was (p99 within 2× + 20 ms)",
        contended.len() == events && c99 <= 2.0 * b99 + 20.0,
        format!("p99 {c99:.1} ms beside the slow one, {b99:.1} ms alone"),
    );
    Ok(())
}

/// Sends `events` events at 25 a second to `case`'s workspace; each one's time from the API's
/// answer to its arrival at `case.path`, in ms.
async fn latencies(
    server: &ServerProcess,
    receiver: &HttpsReceiver,
    case: &Case,
    events: usize,
) -> Result<Vec<f64>> {
    let mut answered: HashMap<String, Instant> = HashMap::new();
    let mut ticks = tokio::time::interval(Duration::from_millis(40));
    for _ in 0..events {
        ticks.tick().await;
        let id = case.event(server).await?;
        answered.insert(id, Instant::now());
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // Only this call's events: the path may have had others before.
        let latencies: Vec<f64> = receiver
            .received()
            .iter()
            .filter(|r| r.path == case.path)
            .filter_map(|r| {
                let body: Value = serde_json::from_slice(&r.body).ok()?;
                let answered = answered.get(body["id"].as_str()?)?;
                Some(r.at.saturating_duration_since(*answered).as_secs_f64() * 1e3)
            })
            .collect();
        if latencies.len() >= events || Instant::now() > deadline {
            return Ok(latencies);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Receivers of one workspace that answer bytes that are not text (an image with NUL bytes, a
/// gzip body sent whatever the request asked, invalid UTF-8), while another workspace takes a
/// steady rate: every answer is recorded (lossy, said so), nothing is sent twice, and the other
/// workspace's latency stays as it was.
async fn binary_answers(
    env: &Env,
    url: &str,
    server: &ServerProcess,
    receiver: &HttpsReceiver,
    s: &mut Scenario,
) -> Result<()> {
    let events = if env.quick { 40 } else { 200 };
    let bodies: [(&str, Vec<u8>); 3] = [
        (
            "/binary-png",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x01".to_vec(),
        ),
        (
            "/binary-gzip",
            b"\x1f\x8b\x08\0\0\0\0\0\0\x03\xcbH\xcd\xc9\xc9\x07\0\x86\xa6\x106\x05\0\0\0".to_vec(),
        ),
        ("/binary-noise", vec![0xff, 0xfe, 0x00, 0xc3, 0x28, 0x00]),
    ];
    let hostile = Case::new(env, url, server, receiver, "/binary-png").await?;
    for (path, body) in &bodies {
        receiver.respond(path, Behaviour::Body(200, body.clone()));
        if *path != "/binary-png" {
            server
                .subscribe(
                    &hostile.account.key,
                    &receiver.url(path),
                    &["CLIENT_CREATED"],
                )
                .await?;
        }
    }
    let bystander = Case::new(env, url, server, receiver, "/beside-binary").await?;
    let mut baseline = Vec::new();
    for _ in 0..10 {
        hostile.event(server).await?;
    }
    // The other workspace's events while the binary answers are recorded.
    baseline.extend(latencies(server, receiver, &bystander, events).await?);
    let deadline = Instant::now() + Duration::from_secs(10);
    let all_in = || {
        bodies
            .iter()
            .all(|(p, _)| arrivals_at(receiver, p).len() >= 10)
    };
    while !all_in() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Recorded once: nothing comes again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let counts: Vec<usize> = bodies
        .iter()
        .map(|(p, _)| arrivals_at(receiver, p).len())
        .collect();
    let bystander_got = arrivals_at(receiver, "/beside-binary").len();
    s.check(
        "binary, gzip and invalid UTF-8 answers: each event sent once to each receiver",
        counts.iter().all(|n| *n == 10),
        format!("requests per receiver {counts:?} (10 events)"),
    );
    let (_, hooks) = server
        .get(
            &hostile.account.key,
            "/api/integrations/automation/webhooks",
        )
        .await?;
    let mut logged = Vec::new();
    for hook in hooks["webhooks"].as_array().into_iter().flatten() {
        let id = hook["id"].as_str().unwrap_or_default();
        let base = format!("/api/integrations/automation/webhooks/{id}/deliveries");
        let (_, log) = server.get(&hostile.account.key, &base).await?;
        for d in log["data"].as_array().into_iter().flatten() {
            let detail_path = format!("{base}/{}", d["id"].as_str().unwrap_or_default());
            let (_, detail) = server.get(&hostile.account.key, &detail_path).await?;
            let attempt = &detail["attempts_log"][0];
            logged.push((
                d["status"] == "DELIVERED",
                attempt["response_body_lossy"] == true,
                attempt["response_body"]
                    .as_str()
                    .is_some_and(|b| !b.contains('\0')),
            ));
        }
    }
    s.check(
        "... each DELIVERED, its answer in the log as text without NUL, marked response_body_lossy",
        logged.len() == 30 && logged.iter().all(|(d, l, t)| *d && *l && *t),
        format!(
            "{} deliveries logged; delivered {}, lossy {}, stored as text {}",
            logged.len(),
            logged.iter().filter(|x| x.0).count(),
            logged.iter().filter(|x| x.1).count(),
            logged.iter().filter(|x| x.2).count()
        ),
    );
    let p99 = percentile(&baseline, 99.0);
    s.figure(
        "another workspace beside binary answers: p99",
        format!("{p99:.1} ms ({events} events at 25/s)"),
    );
    s.check(
        "... and another workspace's events meanwhile arrive once each, p99 under 100 ms",
        baseline.len() == events && bystander_got == events && p99 < 100.0,
        format!("{bystander_got} requests for {events} events, p99 {p99:.1} ms"),
    );
    Ok(())
}

/// A workspace whose webhooks all accept the request and never answer (each attempt holds its
/// slot until the time-out), with more deliveries than the process has slots, beside another
/// workspace taking a steady rate: the hanging one holds its share of the slots, no more, and
/// the other's latency stays as it is alone.
async fn hanging_tenant(
    env: &Env,
    url: &str,
    server: &ServerProcess,
    receiver: &HttpsReceiver,
    s: &mut Scenario,
) -> Result<()> {
    let (webhooks, per_webhook) = if env.quick { (8, 12) } else { (100, 3) };
    let events = if env.quick { 40 } else { 200 };
    let hanging = Case::new(env, url, server, receiver, "/hang/0").await?;
    receiver.respond("/hang/0", Behaviour::Slow(Duration::from_secs(600), 200));
    for n in 1..webhooks {
        let path = format!("/hang/{n}");
        receiver.respond(&path, Behaviour::Slow(Duration::from_secs(600), 200));
        server
            .subscribe(
                &hanging.account.key,
                &receiver.url(&path),
                &["CLIENT_CREATED"],
            )
            .await?;
    }
    let alone = Case::new(env, url, server, receiver, "/beside-hang").await?;
    let baseline = latencies(server, receiver, &alone, events).await?;
    let hung = || {
        receiver
            .received()
            .iter()
            .filter(|r| r.path.starts_with("/hang/"))
            .count()
    };
    for _ in 0..per_webhook {
        hanging.event(server).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while hung() < 48 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let held = hung();
    let contended = latencies(server, receiver, &alone, events).await?;
    let (b99, c99) = (percentile(&baseline, 99.0), percentile(&contended, 99.0));
    s.figure(
        format!("a workspace alone, then beside {webhooks} hanging webhooks of another: p99"),
        format!("{b99:.1} ms, then {c99:.1} ms ({events} events at 25/s each time)"),
    );
    s.check(
        format!(
            "{webhooks} hanging webhooks of one workspace ({} deliveries) hold its share of the \
             process's slots (48 of 64), no more",
            webhooks * per_webhook
        ),
        held > 0 && held <= 48,
        format!("{held} requests hanging"),
    );
    s.check(
        "... and another workspace's latency stays as it is alone (p99 within 2× + 20 ms)",
        contended.len() == events && c99 <= 2.0 * b99 + 20.0,
        format!("p99 {c99:.1} ms beside them, {b99:.1} ms before"),
    );
    // Nothing more of the hanging workspace is sent (its attempts time out within 3 s).
    receiver.respond("/hang/0", Behaviour::Respond(410, vec![]));
    for n in 1..webhooks {
        receiver.respond(&format!("/hang/{n}"), Behaviour::Respond(410, vec![]));
    }
    Ok(())
}
