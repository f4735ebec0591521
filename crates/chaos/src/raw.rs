//! Scenario 5b, malformed and abusive requests written byte by byte over TCP (`raw`).
//!
//! The cases stay below any HTTP client library on purpose: a client would fix the framing,
//! refuse the bytes or time out in its own way, and the point is to see what the server does with
//! what an attacker can actually send. `http` holds the exchange and how an answer is read, the
//! other submodules the cases by what they abuse.

mod body;
mod head;
mod http;
mod pipeline;
mod slow;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;
use timetrack_testkit::ServerProcess;

use self::http::{Answer, Raw, exchange};
use crate::env::Env;
use crate::scenario::Scenario;

/// The health check must answer within this after each case.
const HEALTH_LIMIT: Duration = Duration::from_secs(3);

/// Malformed and abusive requests over raw TCP; each must be answered or cut off cleanly, and
/// the server must stay healthy after each.
pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    let url = env.database("raw").await?;
    let account = env.account(&url, "Raw").await?;
    // Rate limits are not the subject here; lifted so a 429 never hides what a case provokes.
    let mut server = env.plain_serve(&url, "raw")?.unlimited().start().await?;
    let target = Target {
        addr: server
            .base
            .strip_prefix("http://")
            .context("the server's base is not http://")?
            .to_owned(),
        key: account.key.clone(),
        workspace_id: account.workspace_id.clone(),
        probe: reqwest::Client::builder()
            // A new connection per probe: the server must keep accepting while it is abused.
            .pool_max_idle_per_host(0)
            .timeout(HEALTH_LIMIT)
            .build()?,
    };
    let (status, _) = server
        .post(
            &target.key,
            "/api/clients",
            &json!({"name": "Existing client"}),
        )
        .await?;
    if status != 201 {
        bail!("seeding a client: {status}");
    }
    let clients = client_names(&server, &target.key).await?;

    body::oversized_bodies(s, &mut server, &target).await?;
    body::invalid_utf8(s, &mut server, &target).await?;
    head::many_headers(s, &mut server, &target).await?;
    slow::slow_loris(s, &mut server, &target, 1).await?;
    slow::slow_loris(s, &mut server, &target, slow::LORIS_CROWD).await?;
    slow::slow_body(s, &mut server, &target).await?;
    head::not_http(s, &mut server, &target).await?;
    head::long_path(s, &mut server, &target).await?;
    body::lying_length(s, &mut server, &target).await?;
    body::bad_chunks(s, &mut server, &target).await?;
    // Last: if the server does not hold its memory, the cases after this one would suffer.
    pipeline::never_read(s, &mut server, &target, env.quick).await?;

    let after = client_names(&server, &target.key).await?;
    s.check_eq(
        "no malformed request created a client (list unchanged)",
        after,
        clients,
    );
    Ok(())
}

/// Where the raw requests go, and with which key.
#[derive(Debug)]
struct Target {
    /// `127.0.0.1:<port>`.
    addr: String,
    key: String,
    workspace_id: String,
    /// The client of the health probes.
    probe: reqwest::Client,
}

impl Target {
    /// A request with `Host` and `Connection: close` (so a clean server closes once it has
    /// answered, and waiting for the close never waits on keep-alive), then `headers` and `body`
    /// exactly as given.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Vec<u8> {
        let mut out = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        for (name, value) in headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        let mut out = out.into_bytes();
        out.extend_from_slice(body);
        out
    }

    /// The `Authorization` header of the key.
    fn auth(&self) -> (&'static str, String) {
        ("Authorization", format!("Bearer {}", self.key))
    }

    /// An authenticated JSON POST of `body` with its true length.
    fn post_json(&self, path: &str, body: &[u8]) -> Vec<u8> {
        self.request(
            "POST",
            path,
            &[
                self.auth(),
                ("Content-Type", "application/json".to_owned()),
                ("Content-Length", body.len().to_string()),
            ],
            body,
        )
    }

    /// An authenticated chunked JSON POST whose chunked body is given raw.
    fn post_chunked(&self, path: &str, extra: &[(&str, String)], chunked: &[u8]) -> Vec<u8> {
        let mut headers = vec![
            self.auth(),
            ("Content-Type", "application/json".to_owned()),
            ("Transfer-Encoding", "chunked".to_owned()),
        ];
        headers.extend(extra.iter().cloned());
        self.request("POST", path, &headers, chunked)
    }
}

/// Sends each request of a case, records one check on all their answers (with `accept`) and one
/// on the server's health after them.
async fn case(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
    what: &str,
    requests: &[Raw],
    accept: impl Fn(&Answer) -> bool,
) {
    let mut ok = true;
    let mut seen = Vec::new();
    let mut answers = Vec::new();
    for raw in requests {
        let answer = match exchange(&target.addr, raw).await {
            Ok(answer) => answer,
            Err(err) => {
                // Most likely the server is gone; the health check below says so.
                ok = false;
                seen.push(format!("{}: {err:#}", raw.label));
                continue;
            }
        };
        let good = accept(&answer);
        ok &= good;
        seen.push(format!(
            "{}: {}{}",
            raw.label,
            answer.summary(),
            if good { "" } else { " <- not acceptable" }
        ));
        answers.push(answer);
    }
    s.check(what, ok, seen.join("; "));
    let slowest = answers.iter().map(|a| a.elapsed).max().unwrap_or_default();
    s.figure(format!("{what}: slowest answer"), millis(slowest));
    // actix's HTTP/1 parser answers these itself, before any middleware could make them JSON;
    // counted so the report shows how much of §7 ("every error body is JSON") they leave out.
    let bare = answers
        .iter()
        .filter(|a| a.status.is_some_and(|s| s >= 400) && !a.is_json_error())
        .count();
    if bare > 0 {
        s.figure(
            format!("{what}: error answers without a JSON body"),
            format!("{bare} of {}", answers.len()),
        );
    }
    healthy_after(s, server, target, what).await;
}

/// Records that the health check answers 200 within `HEALTH_LIMIT` and the process is alive.
async fn healthy_after(s: &mut Scenario, server: &mut ServerProcess, target: &Target, what: &str) {
    let probe = health(target, &server.base).await;
    let (ok, seen) = match (server.exited(), probe) {
        (Some(status), _) => (false, format!("the server exited ({status})")),
        (None, Ok(took)) => (true, format!("200 in {}", millis(took))),
        (None, Err(err)) => (false, err),
    };
    s.check(format!("healthy after: {what}"), ok, seen);
}

/// `GET /api/health` on a new connection: the time it took, or what went wrong.
async fn health(target: &Target, base: &str) -> Result<Duration, String> {
    let at = Instant::now();
    match target.probe.get(format!("{base}/api/health")).send().await {
        Ok(res) if res.status() == 200 => Ok(at.elapsed()),
        Ok(res) => Err(format!("{} after {}", res.status(), millis(at.elapsed()))),
        Err(err) => Err(format!("no answer after {}: {err}", millis(at.elapsed()))),
    }
}

/// The names of the key's clients, oldest first.
async fn client_names(server: &ServerProcess, key: &str) -> Result<Vec<String>> {
    let (status, body) = server.get(key, "/api/clients?limit=200").await?;
    if status != 200 {
        bail!("listing clients: {status} {body}");
    }
    let mut names: Vec<String> = body["data"]
        .as_array()
        .context("no data in the client list")?
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect();
    names.reverse();
    Ok(names)
}

/// `12 ms` or `1.2 s`.
fn millis(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
