//! Scenarios 9 to 11, abuse of an API key: subscribing in a tight loop with a key while it is
//! being revoked (nothing may be subscribed once the revoke has returned, no other write may pass,
//! and nothing may flow to what the key subscribed), flooding one `Idempotency-Key` (replays and
//! mismatches count against the key's rate limit like any request), and guessing keys from the
//! address valid keys come from (the guesses are limited, the valid keys never).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use timetrack_testkit::HttpsReceiver;

use crate::edges::error_chain;
use crate::env::{Db, Env};
use crate::scenario::{Scenario, say, shorten};

/// The subscribe endpoint.
const SUBSCRIBE: &str = "/api/integrations/automation/webhooks/subscribe";

/// One request of a loop, as answered.
#[derive(Debug, Clone)]
struct Attempt {
    sent: Instant,
    answered: Instant,
    /// 0 when no answer came.
    status: u16,
    body: Value,
    retry_after: Option<u64>,
    /// Which of two bodies was sent (the idempotency flood's mismatches).
    other: bool,
}

/// Sends `request`; the attempt as answered.
async fn attempt(request: reqwest::RequestBuilder, other: bool) -> Attempt {
    let sent = Instant::now();
    let (status, body, retry_after) = match request.send().await {
        Ok(res) => {
            let status = res.status().as_u16();
            let retry_after = res
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            (status, res.json().await.unwrap_or(Value::Null), retry_after)
        }
        Err(err) => (
            0,
            json!({"transport error": error_chain(&err.without_url())}),
            None,
        ),
    };
    Attempt {
        sent,
        answered: Instant::now(),
        status,
        body,
        retry_after,
        other,
    }
}

/// Attempts by status, as `401×12, 429×40`.
fn by_status<'a>(attempts: impl IntoIterator<Item = &'a Attempt>) -> String {
    let mut counts: BTreeMap<u16, usize> = BTreeMap::new();
    for a in attempts {
        *counts.entry(a.status).or_default() += 1;
    }
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|(s, n)| {
            format!(
                "{}×{n}",
                if *s == 0 {
                    "no answer".to_owned()
                } else {
                    s.to_string()
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first answer of each status, as `409 {"error":...}; 201 {...}`.
fn one_per_status<'a>(attempts: impl IntoIterator<Item = &'a Attempt>) -> String {
    let mut first: BTreeMap<u16, &Attempt> = BTreeMap::new();
    for a in attempts {
        first.entry(a.status).or_insert(a);
    }
    first
        .values()
        .map(|a| format!("{} {}", a.status, shorten(&a.body.to_string(), 100)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A 429 as promised: `{"error":"Too many requests"}` with `Retry-After`.
fn proper_429(a: &Attempt) -> bool {
    a.status == 429 && a.body == json!({"error": "Too many requests"}) && a.retry_after.is_some()
}

/// Scenario 9: a key revoked with `timetrack admin revoke-api-key` while it subscribes in a tight
/// loop. Once the command has returned, no subscribe may succeed; afterwards the key has no
/// active subscription, and new events reach nothing it subscribed.
pub async fn revocation_race(env: &Env, s: &mut Scenario) -> Result<()> {
    let window = Duration::from_secs(2);
    let url = env.database("revoke").await?;
    let receiver = HttpsReceiver::start().await;
    let account = env.account(&url, "Revoke").await?;
    let other = env.member(&url, &account.workspace_id).await?;
    let server = env.serve(&url, &receiver, "revoke")?.start().await?;
    let db = Db::connect(&url).await?;
    let key_id = db
        .text(&format!(
            "SELECT id::text FROM api_keys WHERE user_id = '{}'",
            account.user_id
        ))
        .await
        .context("finding the key's id")?;

    // Control: before the revoke, an event reaches what both keys subscribed.
    server
        .subscribe(
            &account.key,
            &receiver.url("/revoked/before"),
            &["CLIENT_CREATED"],
        )
        .await?;
    let (valid_id, _) = server
        .subscribe(&other.key, &receiver.url("/valid"), &["CLIENT_CREATED"])
        .await?;
    let (status, _) = server
        .post(
            &other.key,
            "/api/clients",
            &json!({"name": "Before the revoke"}),
        )
        .await?;
    let both = status == 201 && receiver.wait_for(2, Duration::from_secs(15)).await;
    s.check(
        "control: before the revoke, an event reaches the subscriptions of both keys",
        both,
        format!("create {status}, {} deliveries", receiver.count()),
    );
    // The key is verified (and cached) right before the revoke: the worst case.
    let (status, _) = server.get(&account.key, "/api/me").await?;
    if status != 200 {
        bail!("the key does not work before the revoke: {status}");
    }

    // The loop: one request at a time until the revoke has returned (it must not fill the
    // workspace's 100 subscriptions before then), four at once in the window after it.
    let revoked = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let serial = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (revoked, done, attempts, serial) =
                (revoked.clone(), done.clone(), attempts.clone(), serial.clone());
            let (http, base, key) = (server.http.clone(), server.base.clone(), account.key.clone());
            let receiver_url = receiver.url("/revoked/race");
            tokio::spawn(async move {
                while !done.load(Ordering::SeqCst) {
                    if w > 0 && !revoked.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        continue;
                    }
                    let n = serial.fetch_add(1, Ordering::SeqCst);
                    let request = http
                        .post(format!("{base}{SUBSCRIBE}"))
                        .bearer_auth(&key)
                        .json(&json!({"url": format!("{receiver_url}/{n}"), "events": ["CLIENT_CREATED"]}));
                    let a = attempt(request, false).await;
                    attempts.lock().unwrap_or_else(|e| e.into_inner()).push(a);
                    if !revoked.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            })
        })
        .collect();
    let admin = env.admin(&url);
    let id = key_id.clone();
    let revoke_started = Instant::now();
    let revoke = tokio::task::spawn_blocking(move || admin.run(&["revoke-api-key", "--id", &id]))
        .await?
        .context("timetrack admin revoke-api-key")?;
    let revoked_at = Instant::now();
    revoked.store(true, Ordering::SeqCst);
    say(&format!(
        "  revoke-api-key returned after {} ms: {}",
        revoke_started.elapsed().as_millis(),
        shorten(&revoke.to_string(), 120)
    ));
    tokio::time::sleep(window).await;
    done.store(true, Ordering::SeqCst);
    for w in workers {
        w.await?;
    }
    // Writes other than subscribe, still within the cache's lifetime (5 s) of the key's last
    // check: redirecting the workspace's other webhook to the attacker, rotating its secret.
    let webhook_row =
        format!("SELECT url || ' ' || secret FROM webhook_subscriptions WHERE id = '{valid_id}'");
    let row_before = db.text(&webhook_row).await?;
    let hook = format!(
        "{}/api/integrations/automation/webhooks/{valid_id}",
        server.base
    );
    let mut writes = Vec::new();
    for (method, path, body) in [
        (
            reqwest::Method::PATCH,
            hook.clone(),
            json!({"url": receiver.url("/revoked/redirected")}),
        ),
        (
            reqwest::Method::POST,
            format!("{hook}/rotate-secret"),
            json!({}),
        ),
        (
            reqwest::Method::POST,
            format!("{}/api/clients", server.base),
            json!({"name": "Written with a revoked key"}),
        ),
    ] {
        let request = server
            .http
            .request(method.clone(), path)
            .bearer_auth(&account.key)
            .json(&body);
        writes.push((method, attempt(request, false).await));
    }
    // 429 once the loop's 401s have passed the address's failure limit: refused all the same.
    let refused = writes.iter().all(|(_, a)| {
        (a.status == 401 && a.body == json!({"error": "Unauthorized"})) || proper_429(a)
    });
    let row_after = db.text(&webhook_row).await?;
    s.check(
        "within the cache's lifetime, the revoked key can neither redirect the other key's \
         webhook (PATCH url), rotate its secret, nor create a client: refused, nothing changed",
        refused && row_after == row_before,
        format!(
            "{}; the webhook {}",
            writes
                .iter()
                .map(|(m, a)| format!("{m} {}", a.status))
                .collect::<Vec<_>>()
                .join(", "),
            if row_after == row_before {
                "unchanged"
            } else {
                "CHANGED"
            }
        ),
    );
    let attempts = std::mem::take(&mut *attempts.lock().unwrap_or_else(|e| e.into_inner()));
    let (before, after): (Vec<&Attempt>, Vec<&Attempt>) =
        attempts.iter().partition(|a| a.sent < revoked_at);
    let created_after: Vec<&&Attempt> = after.iter().filter(|a| a.status == 201).collect();
    let refused_properly = |a: &&Attempt| {
        (a.status == 401 && a.body == json!({"error": "Unauthorized"})) || proper_429(a)
    };
    let others: Vec<&&Attempt> = after.iter().filter(|a| !refused_properly(a)).collect();
    let last_201 = created_after
        .iter()
        .map(|a| a.sent.saturating_duration_since(revoked_at))
        .max();

    s.figure(
        "revoke-api-key took",
        format!("{} ms", (revoked_at - revoke_started).as_millis()),
    );
    s.figure(
        "subscribes while the revoke ran (statuses)",
        format!("{} ({})", before.len(), by_status(before.iter().copied())),
    );
    s.figure(
        format!(
            "subscribes in the {} s after it returned (statuses)",
            window.as_secs()
        ),
        format!("{} ({})", after.len(), by_status(after.iter().copied())),
    );
    s.check(
        "no subscribe sent after the revoke returned is accepted (201)",
        !after.is_empty() && created_after.is_empty(),
        if created_after.is_empty() {
            format!("{} attempts, none accepted", after.len())
        } else {
            format!(
                "{} of {} accepted, the last sent {} ms after the revoke returned",
                created_after.len(),
                after.len(),
                last_201.unwrap_or_default().as_millis()
            )
        },
    );
    s.check(
        "each of them is 401 {\"error\":\"Unauthorized\"} or 429 Too many requests",
        others.is_empty(),
        if others.is_empty() {
            by_status(after.iter().copied())
        } else {
            format!(
                "{} others ({}), e.g. {}",
                others.len(),
                by_status(others.iter().map(|a| **a)),
                one_per_status(others.iter().map(|a| **a))
            )
        },
    );
    let active = db
        .count(&format!(
            "SELECT count(*) FROM webhook_subscriptions WHERE api_key_id = '{key_id}' AND status = 'ACTIVE'"
        ))
        .await?;
    let statuses = db
        .text(&format!(
            "SELECT coalesce(string_agg(status || '×' || n, ', ' ORDER BY status), 'none') FROM \
             (SELECT status, count(*) AS n FROM webhook_subscriptions WHERE api_key_id = '{key_id}' \
              GROUP BY status) AS t"
        ))
        .await?;
    s.check(
        "afterwards the revoked key has no ACTIVE subscription",
        active == 0,
        format!("its subscriptions: {statuses}"),
    );

    // An event made with the other key of the workspace afterwards reaches its subscription and
    // nothing the revoked key subscribed.
    let mark = Instant::now();
    let (status, _) = server
        .post(
            &other.key,
            "/api/clients",
            &json!({"name": "After the revoke"}),
        )
        .await?;
    let reached = |path: &str| {
        receiver
            .received()
            .iter()
            .filter(|r| r.at >= mark && r.path.starts_with(path))
            .count()
    };
    // Until every delivery of that event has been settled (sent, failed for good or cancelled).
    let event = db
        .text("SELECT id::text FROM events ORDER BY created_at DESC, id DESC LIMIT 1")
        .await?;
    let pending = format!(
        "SELECT count(*) FROM deliveries WHERE event_id = '{event}' AND status = 'PENDING'"
    );
    let deadline = Instant::now() + Duration::from_secs(if env.quick { 5 } else { 20 });
    while (reached("/valid") == 0 || db.count(&pending).await? > 0) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A moment more for a request still on its way.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let queued = db
        .text(&format!(
            "SELECT coalesce(string_agg(d.status || '×' || d.n, ', ' ORDER BY d.status), 'none') FROM \
             (SELECT d.status, count(*) AS n FROM deliveries d \
              JOIN webhook_subscriptions w ON w.id = d.subscription_id \
              WHERE d.event_id = '{event}' AND w.api_key_id = '{key_id}' GROUP BY d.status) AS d"
        ))
        .await?;
    let valid = reached("/valid");
    let leaked = reached("/revoked/");
    s.figure(
        "deliveries of the later event to the revoked key's subscriptions, by status",
        &queued,
    );
    s.check(
        "an event made afterwards with the workspace's other key reaches its subscription",
        status == 201 && valid > 0,
        format!("create {status}, {valid} deliveries to it"),
    );
    // Queued but not yet sent counts too: it would reach the URL later.
    let live = db
        .count(&format!(
            "SELECT count(*) FROM deliveries d JOIN webhook_subscriptions w ON w.id = d.subscription_id \
             WHERE d.event_id = '{event}' AND w.api_key_id = '{key_id}' \
               AND d.status IN ('PENDING', 'DELIVERED')"
        ))
        .await?;
    s.check(
        "... and nothing subscribed with the revoked key (nothing received, nothing queued)",
        leaked == 0 && live == 0,
        format!(
            "{leaked} requests received there; its deliveries of that event after {:.1} s: {queued}",
            mark.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}

/// Scenario 10: one key floods `POST /api/clients` with one `Idempotency-Key`, mostly with the
/// first body (replays), partly with another (422). Every request counts against the key's rate
/// limit: at most the per-second limit admitted in any second, the rest 429 with `Retry-After`.
pub async fn idempotency_flood(env: &Env, s: &mut Scenario) -> Result<()> {
    // The defaults of `TIMETRACK_RATE_LIMIT_PER_SECOND` and `..._PER_MINUTE`.
    let (per_second, per_minute) = (10, 100);
    let flood = Duration::from_millis(if env.quick { 2_000 } else { 3_000 });
    let url = env.database("idempotency").await?;
    let account = env.account(&url, "Idempotency").await?;
    let server = env.plain_serve(&url, "idempotency")?.start().await?;
    let idempotency_key = format!("chaos-flood-{}", uuid::Uuid::new_v4().simple());
    let same = json!({"name": "Flood client"});
    let different = json!({"name": "Flood other"});
    let post = |body: &Value| {
        server
            .http
            .post(format!("{}/api/clients", server.base))
            .bearer_auth(&account.key)
            .header("Idempotency-Key", &idempotency_key)
            .json(body)
    };

    let first = attempt(post(&same), false).await;
    s.check_eq("the first request creates the client", first.status, 201);
    let client_id = first.body["id"].clone();

    let attempts = Arc::new(Mutex::new(vec![first]));
    let serial = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (attempts, serial) = (attempts.clone(), serial.clone());
            let (same, different) = (post(&same), post(&different));
            tokio::spawn(async move {
                while started.elapsed() < flood {
                    let other = serial.fetch_add(1, Ordering::SeqCst) % 5 == 4;
                    let Some(request) = (if other { &different } else { &same }).try_clone() else {
                        return;
                    };
                    let a = attempt(request, other).await;
                    attempts.lock().unwrap_or_else(|e| e.into_inner()).push(a);
                }
            })
        })
        .collect();
    for w in workers {
        w.await?;
    }
    let took = started.elapsed();
    let attempts = std::mem::take(&mut *attempts.lock().unwrap_or_else(|e| e.into_inner()));

    let mut admitted: Vec<&Attempt> = attempts.iter().filter(|a| a.status != 429).collect();
    admitted.sort_by_key(|a| a.sent);
    // A set of answers sent and answered within one second was admitted within one second,
    // wherever the server's window lay: the most such answers, over every starting point.
    let busiest = (0..admitted.len())
        .map(|i| {
            let from = admitted[i].sent;
            admitted[i..]
                .iter()
                .filter(|a| a.answered < from + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    let refused: Vec<&Attempt> = attempts.iter().filter(|a| a.status == 429).collect();
    let bad_refusals = refused.iter().filter(|a| !proper_429(a)).count();
    let (admitted_same, admitted_other): (Vec<&&Attempt>, Vec<&&Attempt>) =
        admitted.iter().skip(1).partition(|a| !a.other);
    let wrong_same: Vec<&&&Attempt> = admitted_same
        .iter()
        .filter(|a| a.status != 201 || a.body["id"] != client_id)
        .collect();
    let wrong_other: Vec<&&&Attempt> = admitted_other.iter().filter(|a| a.status != 422).collect();
    let sent = attempts.len() - 1;
    let rate = sent as f64 / took.as_secs_f64();

    s.figure(
        "flood",
        format!(
            "{sent} requests in {:.1} s ({rate:.0}/s), one key, one Idempotency-Key, 1 in 5 with another body",
            took.as_secs_f64()
        ),
    );
    s.figure(
        "admitted (not 429), first request included",
        format!(
            "{} ({} replays, {} other body); 429: {}",
            admitted.len(),
            admitted_same.len(),
            admitted_other.len(),
            refused.len()
        ),
    );
    s.figure("most admitted within one second", busiest);
    s.check(
        format!(
            "at most {per_second} admitted in any rolling second (replays and mismatches count)"
        ),
        busiest <= per_second,
        format!(
            "{busiest} in the busiest second; {} admitted of {} in {:.1} s",
            admitted.len(),
            attempts.len(),
            took.as_secs_f64()
        ),
    );
    s.check(
        format!("at most {per_minute} admitted in all (the per-minute limit)"),
        admitted.len() <= per_minute,
        admitted.len().to_string(),
    );
    s.check(
        "every other answer is 429 {\"error\":\"Too many requests\"} with Retry-After",
        bad_refusals == 0 && !refused.is_empty(),
        format!(
            "{} refused, {bad_refusals} without that body or header",
            refused.len()
        ),
    );
    s.check(
        "admitted repeats with the same body replay the first answer (201, same id)",
        wrong_same.is_empty(),
        if wrong_same.is_empty() {
            format!("{} replays", admitted_same.len())
        } else {
            format!(
                "{} others: {}",
                wrong_same.len(),
                by_status(wrong_same.iter().map(|a| ***a))
            )
        },
    );
    s.check(
        "admitted repeats with another body are 422",
        wrong_other.is_empty(),
        if wrong_other.is_empty() {
            format!("{} answered 422", admitted_other.len())
        } else {
            format!(
                "{} others: {}",
                wrong_other.len(),
                by_status(wrong_other.iter().map(|a| ***a))
            )
        },
    );
    let db = Db::connect(&url).await?;
    let made = db
        .count("SELECT count(*) FROM clients WHERE name IN ('Flood client', 'Flood other')")
        .await?;
    s.check_eq("exactly one client was created", made, 1);
    Ok(())
}

/// Scenario 11: a guesser sends well-formed keys from the address that valid keys use too (an
/// automation platform's egress, an office NAT: here, loopback) until the failure limit refuses
/// it; the valid keys, never seen by the process before, keep working from that address for
/// reads and writes, and the guesses stay refused.
pub async fn shared_address(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("address").await?;
    let receiver = HttpsReceiver::start().await;
    let account = env.account(&url, "Shared address").await?;
    let colleague = env.member(&url, &account.workspace_id).await?;
    let server = env
        .serve(&url, &receiver, "address")?
        .env("TIMETRACK_AUTH_FAILURES_PER_MINUTE", "30")
        .start()
        .await?;
    let guess = |n: usize| {
        format!(
            "tt_{:0>43}",
            format!("{n}{}", uuid::Uuid::new_v4().simple())
        )
        .chars()
        .take(46)
        .collect::<String>()
    };
    let mut guesses = Vec::new();
    for n in 0..40 {
        let request = server
            .http
            .get(format!("{}/api/me", server.base))
            .bearer_auth(guess(n));
        guesses.push(attempt(request, false).await);
    }
    let refused_after_30 =
        guesses[..30].iter().all(|a| a.status == 401) && guesses[30..].iter().all(proper_429);
    s.check(
        "40 guessed keys from one address: 30 answered 401, then 429 with Retry-After",
        refused_after_30,
        by_status(&guesses),
    );
    let mut valid = Vec::new();
    for key in [&account.key, &colleague.key] {
        let read = server
            .http
            .get(format!("{}/api/me", server.base))
            .bearer_auth(key);
        valid.push(attempt(read, false).await);
        let write = server
            .http
            .post(format!("{}/api/clients", server.base))
            .bearer_auth(key)
            .json(&json!({"name": format!("Behind the NAT {}", valid.len())}));
        valid.push(attempt(write, false).await);
    }
    let mut later = Vec::new();
    for n in 40..60 {
        let request = server
            .http
            .get(format!("{}/api/me", server.base))
            .bearer_auth(guess(n));
        later.push(attempt(request, false).await);
    }
    s.check(
        "past the limit, two valid keys never seen before pass from the same address (GET 200, \
         POST 201 each)",
        valid.iter().map(|a| a.status).collect::<Vec<_>>() == [200, 201, 200, 201],
        by_status(&valid),
    );
    s.check(
        "... while the guesses from it stay refused (429)",
        later.iter().all(proper_429),
        by_status(&later),
    );
    Ok(())
}
