//! Scenario 5, input fuzzing: malformed and abusive requests written byte by byte over TCP
//! (`raw`), and Schemathesis against the served OpenAPI description (`schemathesis`).
//!
//! The raw cases stay below any HTTP client library on purpose: a client would fix the framing,
//! refuse the bytes or time out in its own way, and the point is to see what the server does with
//! what an attacker can actually send.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use timetrack_adapters::testing::ServerProcess;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::Command;

use crate::env::Env;
use crate::scenario::{Scenario, percentile, say};

/// How long one raw exchange may take before it counts as a hang.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(10);
/// The health check must answer within this after each case.
const HEALTH_LIMIT: Duration = Duration::from_secs(3);
/// A slow-loris connection must be cut off within this (actix's head timeout is 5 s).
const LORIS_LIMIT: Duration = Duration::from_secs(15);
/// The pause between two bytes of a slow-loris request.
const DRIP: Duration = Duration::from_millis(500);
/// A health check during a slow-loris attack must answer within this.
const PROMPT: Duration = Duration::from_secs(1);
/// Slow-loris connections held open at once in the second attack.
const LORIS_CROWD: usize = 50;
/// Size of the oversized bodies (the service accepts 64 KiB).
const OVERSIZED: usize = 3 * 1024 * 1024;

/// The Schemathesis release the suite installs, and whose command line it drives.
const SCHEMATHESIS_VERSION: &str = "4.32.5";
/// Test cases per operation and phase, full run and `--quick`.
const EXAMPLES: (u32, u32) = (50, 10);
/// How long the Schemathesis run may take before it is killed.
const FUZZ_LIMIT: Duration = Duration::from_secs(8 * 60);

// ---------------------------------------------------------------------------------------------
// Raw requests
// ---------------------------------------------------------------------------------------------

/// Malformed and abusive requests over raw TCP; each must be answered or cut off cleanly, and
/// the server must stay healthy after each.
pub async fn raw(env: &Env, s: &mut Scenario) -> Result<()> {
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

    oversized_bodies(s, &mut server, &target).await?;
    invalid_utf8(s, &mut server, &target).await?;
    many_headers(s, &mut server, &target).await?;
    slow_loris(s, &mut server, &target, 1).await?;
    slow_loris(s, &mut server, &target, LORIS_CROWD).await?;
    not_http(s, &mut server, &target).await?;
    long_path(s, &mut server, &target).await?;
    lying_length(s, &mut server, &target).await?;
    bad_chunks(s, &mut server, &target).await?;

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

    /// An authenticated JSON POST of `body` with its true length.
    fn post_json(&self, path: &str, body: &[u8]) -> Vec<u8> {
        self.request(
            "POST",
            path,
            &[
                ("Authorization", format!("Bearer {}", self.key)),
                ("Content-Type", "application/json".to_owned()),
                ("Content-Length", body.len().to_string()),
            ],
            body,
        )
    }

    /// An authenticated chunked JSON POST whose chunked body is given raw.
    fn post_chunked(&self, path: &str, extra: &[(&str, String)], chunked: &[u8]) -> Vec<u8> {
        let mut headers = vec![
            ("Authorization", format!("Bearer {}", self.key)),
            ("Content-Type", "application/json".to_owned()),
            ("Transfer-Encoding", "chunked".to_owned()),
        ];
        headers.extend(extra.iter().cloned());
        self.request("POST", path, &headers, chunked)
    }
}

/// How the bytes of one raw request end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The write side stays open until the exchange ends.
    Open,
    /// The write side is shut once everything is sent: a client that gives up mid-request.
    HalfClose,
}

/// One raw request of a case.
#[derive(Debug)]
struct Raw {
    label: String,
    bytes: Vec<u8>,
    ending: Ending,
}

impl Raw {
    fn new(label: &str, bytes: Vec<u8>) -> Self {
        Self {
            label: label.to_owned(),
            bytes,
            ending: Ending::Open,
        }
    }
}

/// How the server left the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// Closed (FIN).
    Closed,
    /// Reset.
    Reset,
    /// Still open when the exchange's time ran out.
    Open,
}

/// What the server did with one raw request.
#[derive(Debug)]
struct Answer {
    /// The response's status, when a response head arrived.
    status: Option<u16>,
    content_type: Option<String>,
    body: Vec<u8>,
    /// Bytes came back that are not an HTTP response.
    garbled: bool,
    /// The whole response arrived (its head and all of its body).
    complete: bool,
    close: Close,
    elapsed: Duration,
}

impl Answer {
    /// `{"error": <string>}` with a JSON content type.
    fn is_json_error(&self) -> bool {
        self.error_message().is_some()
    }

    /// The `error` string of a JSON error body.
    fn error_message(&self) -> Option<String> {
        if !self
            .content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/json"))
        {
            return None;
        }
        let body: Value = serde_json::from_slice(&self.body).ok()?;
        body.get("error")?.as_str().map(str::to_owned)
    }

    /// Answered (a whole response) or cut off (closed or reset), never a 5xx, a hang or garbage.
    fn is_clean(&self) -> bool {
        let answered = self.status.is_some() && self.complete;
        !self.garbled
            && self.status.is_none_or(|s| s < 500)
            && (answered || self.close != Close::Open)
    }

    /// Clean, and any answer a 4xx.
    fn is_rejection(&self) -> bool {
        self.is_clean() && self.status.is_none_or(|s| (400..500).contains(&s))
    }

    /// The status (with its JSON error if any), how the connection ended and the time taken.
    fn summary(&self) -> String {
        let answer = match self.status {
            None if self.garbled => format!(
                "garbage answer {:?}",
                shorten(&String::from_utf8_lossy(&self.body), 60)
            ),
            None => "no answer".to_owned(),
            Some(status) => match self.error_message() {
                Some(message) => format!("{status} {{\"error\":{message:?}}}"),
                None if self.body.is_empty() => format!(
                    "{status} (empty body, {})",
                    self.content_type.as_deref().unwrap_or("no content type")
                ),
                None => format!(
                    "{status} {:?} ({})",
                    shorten(&String::from_utf8_lossy(&self.body), 60),
                    self.content_type.as_deref().unwrap_or("no content type")
                ),
            },
        };
        let close = match self.close {
            Close::Closed => "closed",
            Close::Reset => "reset",
            Close::Open if self.complete => "left open",
            Close::Open => "HUNG",
        };
        format!("{answer}, {close}, {}", millis(self.elapsed))
    }
}

/// Sends `raw` on a new connection and reads until the server closes it, resets it, or
/// `EXCHANGE_LIMIT` passes.
async fn exchange(addr: &str, raw: &Raw) -> Result<Answer> {
    let started = Instant::now();
    let stream = tokio::time::timeout(HEALTH_LIMIT, TcpStream::connect(addr))
        .await
        .context("connecting timed out")?
        .context("connecting")?;
    let (mut reader, mut writer) = stream.into_split();
    let bytes = raw.bytes.clone();
    let ending = raw.ending;
    // Written beside the reading: the server may answer and close before it has read everything,
    // and a writer blocked on a full socket buffer must not keep that answer from being read.
    let sending = tokio::spawn(async move {
        if writer.write_all(&bytes).await.is_ok() && ending == Ending::HalfClose {
            let _ = writer.shutdown().await;
        }
        // Returned, not dropped: dropping the write half would half-close the connection.
        writer
    });
    let deadline = tokio::time::Instant::now() + EXCHANGE_LIMIT;
    let mut received = Vec::new();
    let mut chunk = vec![0_u8; 64 * 1024];
    let close = loop {
        match tokio::time::timeout_at(deadline, reader.read(&mut chunk)).await {
            Err(_) => break Close::Open,
            Ok(Ok(0)) => break Close::Closed,
            Ok(Ok(n)) => received.extend_from_slice(&chunk[..n]),
            Ok(Err(_)) => break Close::Reset,
        }
    };
    let elapsed = started.elapsed();
    sending.abort();
    Ok(parse_response(&received, close, elapsed))
}

/// Reads the bytes a server sent as one HTTP/1.1 response.
fn parse_response(received: &[u8], close: Close, elapsed: Duration) -> Answer {
    let mut answer = Answer {
        status: None,
        content_type: None,
        body: Vec::new(),
        garbled: false,
        complete: false,
        close,
        elapsed,
    };
    if received.is_empty() {
        return answer;
    }
    if !received.starts_with(b"HTTP/1.") {
        answer.garbled = true;
        answer.body = received.to_vec();
        return answer;
    }
    let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") else {
        // A head that never ended: not a response.
        answer.garbled = close != Close::Open;
        answer.body = received.to_vec();
        return answer;
    };
    let head = String::from_utf8_lossy(&received[..end]);
    let mut lines = head.split("\r\n");
    answer.status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok());
    if answer.status.is_none() {
        answer.garbled = true;
    }
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-type" => answer.content_type = Some(value.to_owned()),
            "content-length" => length = value.parse::<usize>().ok(),
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let rest = &received[end + 4..];
    if chunked {
        let (body, complete) = dechunk(rest);
        answer.body = body;
        answer.complete = complete;
    } else if let Some(length) = length {
        answer.complete = rest.len() >= length;
        answer.body = rest[..rest.len().min(length)].to_vec();
    } else {
        // Without a length the body ends where the connection does.
        answer.complete = close != Close::Open;
        answer.body = rest.to_vec();
    }
    answer
}

/// A chunked body's data, and whether its last chunk arrived.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size = std::str::from_utf8(&rest[..line_end])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next().unwrap_or("").trim(), 16).ok());
        let Some(size) = size else {
            return (body, false);
        };
        if size == 0 {
            return (body, true);
        }
        let data = &rest[line_end + 2..];
        if data.len() < size + 2 {
            body.extend_from_slice(&data[..data.len().min(size)]);
            return (body, false);
        }
        body.extend_from_slice(&data[..size]);
        rest = &data[size + 2..];
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

/// Case 1: 3 MB JSON bodies to `POST /api/clients`, with a `Content-Length` and chunked.
async fn oversized_bodies(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let mut body = br#"{"name":""#.to_vec();
    body.resize(OVERSIZED, b'a');
    body.extend_from_slice(br#""}"#);
    let mut chunked = Vec::new();
    for piece in body.chunks(64 * 1024) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let requests = [
        Raw::new("Content-Length", target.post_json("/api/clients", &body)),
        Raw::new(
            "chunked",
            target.post_chunked("/api/clients", &[], &chunked),
        ),
    ];
    // 413 with the JSON error; a connection cut without an answer is clean too.
    case(
        s,
        server,
        target,
        "3 MB JSON body to POST /api/clients: 413 JSON or cut off",
        &requests,
        |a| {
            a.is_clean()
                && match a.status {
                    Some(status) => status == 413 && a.is_json_error(),
                    None => a.close != Close::Open,
                }
        },
    )
    .await;
    Ok(())
}

/// Case 2: invalid UTF-8 inside a JSON string, to `POST /api/clients` and to the client search.
async fn invalid_utf8(s: &mut Scenario, server: &mut ServerProcess, target: &Target) -> Result<()> {
    let before = client_names(server, &target.key).await?;
    let strings: [(&str, &[u8]); 5] = [
        ("bytes ff fe", b"bad \xff\xfe name"),
        ("truncated sequence c3 28", b"\xc3\x28"),
        ("encoded surrogate ed a0 80", b"\xed\xa0\x80 x"),
        ("overlong slash c0 af", b"\xc0\xaf x"),
        ("escaped lone surrogate \\ud800", br"\ud800 x"),
    ];
    let with = |prefix: &[u8], inner: &[u8]| {
        let mut body = prefix.to_vec();
        body.extend_from_slice(inner);
        body.extend_from_slice(br#""}"#);
        body
    };
    let creates: Vec<Raw> = strings
        .iter()
        .map(|(label, inner)| {
            Raw::new(
                label,
                target.post_json("/api/clients", &with(br#"{"name":""#, inner)),
            )
        })
        .collect();
    case(
        s,
        server,
        target,
        "invalid UTF-8 in POST /api/clients: 400 JSON error",
        &creates,
        |a| a.is_clean() && a.status == Some(400) && a.is_json_error(),
    )
    .await;

    let find = "/api/integrations/automation/triggers/clients/find";
    let prefix = format!(r#"{{"workspace_id":"{}","name":""#, target.workspace_id);
    let finds: Vec<Raw> = strings
        .iter()
        .map(|(label, inner)| {
            Raw::new(
                label,
                target.post_json(find, &with(prefix.as_bytes(), inner)),
            )
        })
        .collect();
    case(
        s,
        server,
        target,
        "invalid UTF-8 in POST .../clients/find: 400 \"Invalid request parameters\"",
        &finds,
        |a| {
            a.is_clean()
                && a.status == Some(400)
                && a.error_message().as_deref() == Some("Invalid request parameters")
        },
    )
    .await;

    let after = client_names(server, &target.key).await?;
    s.check_eq(
        "invalid UTF-8: no client created (list unchanged)",
        after,
        before,
    );
    Ok(())
}

/// Case 3: a request with 200 extra headers.
async fn many_headers(s: &mut Scenario, server: &mut ServerProcess, target: &Target) -> Result<()> {
    let mut headers = vec![("Authorization", format!("Bearer {}", target.key))];
    let names: Vec<String> = (0..200).map(|i| format!("X-Fuzz-{i:03}")).collect();
    headers.extend(names.iter().map(|n| (n.as_str(), "value".to_owned())));
    let requests = [Raw::new(
        "GET /api/me",
        target.request("GET", "/api/me", &headers, b""),
    )];
    case(
        s,
        server,
        target,
        "200 extra headers: 200, 400 or 431, never 5xx",
        &requests,
        |a| a.is_clean() && matches!(a.status, None | Some(200 | 400 | 431)),
    )
    .await;
    Ok(())
}

/// What one slow-loris connection saw.
#[derive(Debug)]
struct Loris {
    connected: bool,
    /// When the server closed or reset it (or answered), from the connect; `None`: still open at
    /// the end of the wait.
    cut_after: Option<Duration>,
    /// The status the server answered before closing, if any (408 expected).
    status: Option<u16>,
    /// Bytes sent before the cut.
    sent: usize,
}

/// A connection that sends a request head one byte every `DRIP`, and never finishes it.
async fn loris(addr: String) -> Loris {
    let started = Instant::now();
    let Ok(Ok(stream)) = tokio::time::timeout(HEALTH_LIMIT, TcpStream::connect(&addr)).await else {
        return Loris {
            connected: false,
            cut_after: None,
            status: None,
            sent: 0,
        };
    };
    let (mut reader, mut writer) = stream.into_split();
    let head =
        b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow-loris\r\nX-Padding: ";
    let mut sent = 0;
    let mut received = Vec::new();
    let cut = {
        let drip = async {
            loop {
                let byte = head.get(sent).copied().unwrap_or(b'a');
                if writer.write_all(&[byte]).await.is_err() {
                    return;
                }
                sent += 1;
                tokio::time::sleep(DRIP).await;
            }
        };
        let watch = async {
            let mut chunk = [0_u8; 4096];
            while let Ok(n) = reader.read(&mut chunk).await
                && n > 0
            {
                received.extend_from_slice(&chunk[..n]);
            }
        };
        tokio::select! {
            () = drip => true,
            () = watch => true,
            () = tokio::time::sleep(LORIS_LIMIT + Duration::from_secs(5)) => false,
        }
    };
    let status = parse_response(&received, Close::Closed, Duration::ZERO).status;
    Loris {
        connected: true,
        cut_after: cut.then(|| started.elapsed()),
        status,
        sent,
    }
}

/// Case 4: `connections` slow-loris connections at once; each must be cut off within
/// `LORIS_LIMIT`, and the health check must answer within `PROMPT` all along.
async fn slow_loris(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
    connections: usize,
) -> Result<()> {
    let what = format!("slow-loris, {connections} connection(s), a byte every 500 ms");
    let attackers: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(loris(target.addr.clone())))
        .collect();
    // Once the drips have begun, probe until the last attacker is done.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    while attackers.iter().any(|a| !a.is_finished()) {
        match health(target, &server.base).await {
            Ok(took) => latencies.push(took.as_secs_f64()),
            Err(err) => failures.push(err),
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let mut results = Vec::new();
    for attacker in attackers {
        results.push(attacker.await?);
    }

    let connected = results.iter().filter(|r| r.connected).count();
    let cuts: Vec<f64> = results
        .iter()
        .filter_map(|r| r.cut_after)
        .filter(|d| *d <= LORIS_LIMIT)
        .map(|d| d.as_secs_f64())
        .collect();
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for r in &results {
        let key = r
            .status
            .map_or_else(|| "closed without answer".to_owned(), |s| s.to_string());
        *statuses.entry(key).or_default() += 1;
    }
    let max_sent = results.iter().map(|r| r.sent).max().unwrap_or(0);
    s.check_eq(
        format!("{what}: every connection accepted"),
        connected,
        connections,
    );
    s.check(
        format!(
            "{what}: cut off by the server within {} s",
            LORIS_LIMIT.as_secs()
        ),
        cuts.len() == connections,
        format!(
            "{} of {connections} cut off, after {:.1}-{:.1} s ({}); at most {max_sent} bytes sent",
            cuts.len(),
            cuts.iter().copied().fold(f64::INFINITY, f64::min),
            cuts.iter().copied().fold(0.0, f64::max),
            statuses
                .iter()
                .map(|(k, n)| format!("{k} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let slowest = latencies.iter().copied().fold(0.0, f64::max);
    s.check(
        format!(
            "{what}: health answers in < {} s meanwhile",
            PROMPT.as_secs()
        ),
        failures.is_empty() && !latencies.is_empty() && slowest < PROMPT.as_secs_f64(),
        format!(
            "{} probes, p50 {:.0} ms, max {:.0} ms{}",
            latencies.len() + failures.len(),
            percentile(&latencies, 50.0) * 1000.0,
            slowest * 1000.0,
            if failures.is_empty() {
                String::new()
            } else {
                format!(", failed: {}", failures.join("; "))
            }
        ),
    );
    s.figure(
        format!("slow-loris x{connections}: cut off after (max)"),
        format!("{:.1} s", cuts.iter().copied().fold(0.0, f64::max)),
    );
    s.figure(
        format!("slow-loris x{connections}: health latency meanwhile (max)"),
        format!("{:.0} ms", slowest * 1000.0),
    );
    healthy_after(s, server, target, &what).await;
    Ok(())
}

/// Case 5a: bytes that are not HTTP at all.
async fn not_http(s: &mut Scenario, server: &mut ServerProcess, target: &Target) -> Result<()> {
    let mut hello = vec![
        0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03,
    ];
    hello.extend(noise(0x5eed, 160));
    let requests = [
        Raw::new("a TLS ClientHello", hello),
        Raw::new("4 KiB of binary noise", noise(0xfeed, 4096)),
        Raw::new("1 KiB of NUL bytes", vec![0; 1024]),
        Raw::new(
            "a line of text",
            b"HELLO SERVER, THIS IS NOT HTTP\r\n\r\n".to_vec(),
        ),
        Raw::new(
            "an unknown protocol version",
            format!("GET /api/health HTTP/9.9\r\nHost: {}\r\n\r\n", target.addr).into_bytes(),
        ),
    ];
    case(
        s,
        server,
        target,
        "garbage that is not HTTP: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}

/// Case 5b: a request line with a 100 KB path.
async fn long_path(s: &mut Scenario, server: &mut ServerProcess, target: &Target) -> Result<()> {
    let path = format!("/api/{}", "a".repeat(100 * 1024));
    let auth = [("Authorization", format!("Bearer {}", target.key))];
    let requests = [
        Raw::new("GET, 100 KB path", target.request("GET", &path, &auth, b"")),
        Raw::new(
            "GET, 100 KB query",
            target.request(
                "GET",
                &format!("/api/clients?cursor={}", "b".repeat(100 * 1024)),
                &auth,
                b"",
            ),
        ),
    ];
    case(
        s,
        server,
        target,
        "request line of 100 KB: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}

/// Case 5c: a `Content-Length` larger than the body, then the client stops sending.
async fn lying_length(s: &mut Scenario, server: &mut ServerProcess, target: &Target) -> Result<()> {
    let body = br#"{"name":"Liar"}"#;
    let headers = [
        ("Authorization", format!("Bearer {}", target.key)),
        ("Content-Type", "application/json".to_owned()),
        ("Content-Length", "1000".to_owned()),
    ];
    let requests = [Raw {
        label: "Content-Length 1000, 15 bytes, then write side closed".to_owned(),
        bytes: target.request("POST", "/api/clients", &headers, body),
        ending: Ending::HalfClose,
    }];
    case(
        s,
        server,
        target,
        "Content-Length larger than the body: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}

/// Case 5d: chunked bodies whose chunk sizes are wrong, and a body framed two ways at once.
async fn bad_chunks(s: &mut Scenario, server: &mut ServerProcess, target: &Target) -> Result<()> {
    let data = br#"{"name":"Chunky"}"#;
    let framed = |size: &str| {
        let mut out = format!("{size}\r\n").into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n0\r\n\r\n");
        out
    };
    let path = "/api/clients";
    let requests = [
        Raw::new(
            "size not hex (zz)",
            target.post_chunked(path, &[], &framed("zz")),
        ),
        Raw::new(
            "size negative (-11)",
            target.post_chunked(path, &[], &framed("-11")),
        ),
        Raw::new(
            "size overflowing 64 bits",
            target.post_chunked(path, &[], &framed("ffffffffffffffffffffffff")),
        ),
        Raw::new(
            "size smaller than the data (5)",
            target.post_chunked(path, &[], &framed("5")),
        ),
        Raw::new(
            "Content-Length and chunked together",
            target.post_chunked(path, &[("Content-Length", "4".to_owned())], &framed("11")),
        ),
    ];
    case(
        s,
        server,
        target,
        "chunked encoding with a bad chunk size: 4xx or closed",
        &requests,
        Answer::is_rejection,
    )
    .await;
    Ok(())
}

/// `len` reproducible pseudo-random bytes (xorshift).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Schemathesis
// ---------------------------------------------------------------------------------------------

/// Schemathesis, with all its checks, against the served `GET /api/openapi.json`.
pub async fn schemathesis(env: &Env, s: &mut Scenario) -> Result<()> {
    let at = Instant::now();
    let bin = install_schemathesis(env).await?;
    s.figure("schemathesis version", SCHEMATHESIS_VERSION);
    s.figure(
        "install or reuse",
        format!("{:.1} s", at.elapsed().as_secs_f64()),
    );

    let url = env.database("fuzz").await?;
    let account = env.account(&url, "Fuzz").await?;
    let mut server = env
        .plain_serve(&url, "fuzz")?
        .unlimited()
        // The fuzzer sends hundreds of requests without a key on purpose; past the per-address
        // limit on failed authentication they would all be 429s and the 401 path go untested.
        .env("TIMETRACK_AUTH_FAILURES_PER_MINUTE", "1000000000")
        .start()
        .await?;
    seed_data(&server, &account.key).await?;

    let dir = env.dir.join("schemathesis");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let examples = if env.quick { EXAMPLES.1 } else { EXAMPLES.0 };
    let json_path = dir.join("report.json");
    let ndjson_path = dir.join("events.ndjson");
    let junit_path = dir.join("junit.xml");
    let base = server.base.clone();
    let seed = uuid::Uuid::new_v4().as_u64_pair().0 >> 1;
    s.figure("seed (replay with --seed)", seed);
    let args: Vec<String> = vec![
        "run".into(),
        format!("{base}/api/openapi.json"),
        "--url".into(),
        base.clone(),
        "--checks".into(),
        "all".into(),
        "--max-examples".into(),
        examples.to_string(),
        // Every case runs even once an operation has failed, so an early schema complaint
        // cannot end the search for server errors on that operation.
        "--continue-on-failure".into(),
        "--workers".into(),
        "1".into(),
        "--request-timeout".into(),
        "10".into(),
        "--header".into(),
        format!("Authorization: Bearer {}", account.key),
        "--report".into(),
        "junit,json,ndjson".into(),
        "--report-junit-path".into(),
        junit_path.display().to_string(),
        "--report-json-path".into(),
        json_path.display().to_string(),
        "--report-ndjson-path".into(),
        ndjson_path.display().to_string(),
        // Chosen here rather than by Schemathesis: its own seeds exceed what a JSON number keeps.
        "--seed".into(),
        seed.to_string(),
        "--no-color".into(),
    ];
    let shown = args
        .iter()
        .map(|a| {
            let a = a.replace(&account.key, "<key>");
            if a.contains(' ') { format!("'{a}'") } else { a }
        })
        .collect::<Vec<_>>()
        .join(" ");
    s.figure("command", format!("schemathesis {shown}"));
    say(&format!(
        "  running schemathesis ({examples} examples per operation), output in {}",
        dir.display()
    ));

    let run_at = Instant::now();
    let mut command = Command::new(&bin);
    // Its own directory, so its example database and any stray config stay out of the repository.
    command.args(&args).current_dir(&dir).env("NO_COLOR", "1");
    let exit = run_logged(&mut command, &dir.join("output.log"), FUZZ_LIMIT).await?;
    let run_time = run_at.elapsed();
    s.figure("fuzzing time", format!("{:.1} s", run_time.as_secs_f64()));
    match exit {
        Some(exit) => {
            let report: Value =
                serde_json::from_str(&std::fs::read_to_string(&json_path).with_context(|| {
                    format!("no JSON report (exit {exit}), see {}", dir.display())
                })?)?;
            let events =
                std::fs::read_to_string(&ndjson_path).context("reading the NDJSON events")?;
            judge(s, &report, &Findings::read(&events)?, exit);
        }
        None => {
            s.check(
                format!(
                    "schemathesis finished within {} min",
                    FUZZ_LIMIT.as_secs() / 60
                ),
                false,
                format!("killed after {:.0} s", run_time.as_secs_f64()),
            );
        }
    }

    let probe = reqwest::Client::builder().timeout(HEALTH_LIMIT).build()?;
    let health = probe.get(format!("{base}/api/health")).send().await;
    let exited = server.exited();
    s.check(
        "server healthy after fuzzing",
        exited.is_none() && health.as_ref().is_ok_and(|r| r.status() == 200),
        match (exited, health) {
            (Some(status), _) => format!("the server exited ({status})"),
            (None, Ok(r)) => r.status().to_string(),
            (None, Err(err)) => err.to_string(),
        },
    );
    Ok(())
}

/// The virtual environment's `schemathesis`, installed at `SCHEMATHESIS_VERSION` unless it
/// already is.
async fn install_schemathesis(env: &Env) -> Result<PathBuf> {
    let venv = env.dir.join("venv");
    let bin = venv.join("bin").join("schemathesis");
    if installed_version(&bin).await.as_deref() == Some(SCHEMATHESIS_VERSION) {
        return Ok(bin);
    }
    let log = env.dir.join("schemathesis-install.log");
    say(&format!(
        "  installing schemathesis {SCHEMATHESIS_VERSION} into {} (log {})",
        venv.display(),
        log.display()
    ));
    let python = venv.join("bin").join("python");
    if !python.exists() {
        let made = run_logged(
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
            &log,
            Duration::from_secs(300),
        )
        .await?;
        if !made.is_some_and(|s| s.success()) {
            bail!("python3 -m venv failed; see {}", log.display());
        }
    }
    let installed = run_logged(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            &format!("schemathesis=={SCHEMATHESIS_VERSION}"),
        ]),
        &log,
        Duration::from_secs(900),
    )
    .await?;
    let version = installed_version(&bin).await;
    if !installed.is_some_and(|s| s.success()) || version.as_deref() != Some(SCHEMATHESIS_VERSION) {
        bail!(
            "installing schemathesis {SCHEMATHESIS_VERSION} failed (found {version:?}); see {}",
            log.display()
        );
    }
    Ok(bin)
}

/// The version `schemathesis --version` reports (`schemathesis, version X`).
async fn installed_version(bin: &Path) -> Option<String> {
    if !bin.exists() {
        return None;
    }
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(bin)
            .arg("--version")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().rsplit(' ').next().map(str::to_owned)
}

/// Runs `command` with its output appended to `log`; its exit status, or `None` when it was
/// killed after `limit`.
async fn run_logged(
    command: &mut Command,
    log: &Path,
    limit: Duration,
) -> Result<Option<ExitStatus>> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .kill_on_drop(true);
    let mut child = command.spawn().context("starting a child process")?;
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => Ok(Some(status?)),
        Err(_) => {
            let _ = child.kill().await;
            Ok(None)
        }
    }
}

/// A little of everything, so that reads have rows and ids to find: a client, a project with a
/// task, a tag, a manual entry and a stopped timer.
async fn seed_data(server: &ServerProcess, key: &str) -> Result<()> {
    let create = |path: &'static str, body: Value| async move {
        let (status, created) = server.post(key, path, &body).await?;
        if !(200..300).contains(&status) {
            bail!("seeding {path}: {status} {created}");
        }
        Ok::<_, anyhow::Error>(created["id"].as_str().unwrap_or_default().to_owned())
    };
    let client = create(
        "/api/clients",
        json!({"name": "Fuzz Client", "email": "billing@fuzz.example", "type": "company"}),
    )
    .await?;
    let project = create(
        "/api/projects",
        json!({"name": "Fuzz Project", "client_id": client}),
    )
    .await?;
    let (status, task) = server
        .post(
            key,
            &format!("/api/projects/{project}/tasks"),
            &json!({"name": "Fuzz Task"}),
        )
        .await?;
    if status != 201 {
        bail!("seeding a task: {status} {task}");
    }
    let tag = create("/api/tags", json!({"name": "fuzz"})).await?;
    create(
        "/api/time-entries",
        json!({
            "start": "2024-01-02T09:00:00Z",
            "end": "2024-01-02T10:30:00Z",
            "description": "Seeded entry",
            "project_id": project,
            "task_id": task["id"],
            "tag_ids": [tag],
            "billable": true,
        }),
    )
    .await?;
    create(
        "/api/time-entries/start",
        json!({"description": "Seeded timer"}),
    )
    .await?;
    create("/api/time-entries/stop", json!({})).await?;
    Ok(())
}

/// What the run's NDJSON event stream shows: every request, response and check result.
#[derive(Debug, Default)]
struct Findings {
    /// Requests sent.
    requests: u64,
    /// Requests that got no response (connection errors, time-outs).
    unanswered: u64,
    /// Responses by status.
    statuses: BTreeMap<u16, u64>,
    /// 5xx responses, with up to a few examples.
    server_errors: (u64, Vec<String>),
    /// Error responses (4xx, 5xx).
    error_responses: u64,
    /// Error responses that are not `{"error": string}` with a JSON content type, with examples.
    non_json_errors: (u64, Vec<String>),
    /// Per check: runs that passed, runs that failed.
    runs: BTreeMap<String, (u64, u64)>,
    /// Per check: how many error responses it ran on.
    on_errors: BTreeMap<String, u64>,
    /// Per check, per operation: one failure, described.
    examples: BTreeMap<String, BTreeMap<String, String>>,
}

impl Findings {
    fn read(events: &str) -> Result<Self> {
        let mut found = Self::default();
        for line in events.lines().filter(|l| !l.trim().is_empty()) {
            let event: Value = serde_json::from_str(line).context("an NDJSON event")?;
            if let Some(recorder) = event.pointer("/ScenarioFinished/recorder") {
                found.scenario(recorder);
            }
        }
        Ok(found)
    }

    /// One finished scenario: its interactions (by case id) and the check results on them.
    fn scenario(&mut self, recorder: &Value) {
        let empty = serde_json::Map::new();
        let interactions = recorder["interactions"].as_object().unwrap_or(&empty);
        for interaction in interactions.values() {
            self.interaction(interaction);
        }
        for (case, results) in recorder["checks"].as_object().unwrap_or(&empty) {
            let interaction = interactions.get(case);
            let is_error = interaction
                .and_then(|i| i.pointer("/response/status_code"))
                .and_then(Value::as_u64)
                .is_some_and(|s| s >= 400);
            for result in results.as_array().into_iter().flatten() {
                let name = result["name"].as_str().unwrap_or("?").to_owned();
                let runs = self.runs.entry(name.clone()).or_default();
                match result["status"].as_str() {
                    Some("success") => runs.0 += 1,
                    Some("failure") => {
                        runs.1 += 1;
                        let failure = &result["failure_info"]["failure"];
                        let operation = failure["operation"]
                            .as_str()
                            .or_else(|| recorder["label"].as_str())
                            .unwrap_or("?")
                            .to_owned();
                        self.examples
                            .entry(name.clone())
                            .or_default()
                            .entry(operation)
                            .or_insert_with(|| describe_failure(failure, interaction));
                    }
                    _ => continue,
                }
                if is_error {
                    *self.on_errors.entry(name).or_default() += 1;
                }
            }
        }
    }

    fn interaction(&mut self, interaction: &Value) {
        self.requests += 1;
        let response = &interaction["response"];
        let Some(status) = response["status_code"].as_u64() else {
            self.unanswered += 1;
            return;
        };
        let status = u16::try_from(status).unwrap_or(u16::MAX);
        *self.statuses.entry(status).or_default() += 1;
        if status < 400 {
            return;
        }
        self.error_responses += 1;
        let body = decode_body(&response["content"]);
        if status >= 500 {
            push_example(&mut self.server_errors, describe_interaction(interaction));
        }
        let json_type = response["headers"]
            .as_object()
            .and_then(|h| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            })
            .and_then(|(_, v)| v[0].as_str())
            .is_some_and(|v| v.starts_with("application/json"));
        let is_error_body = serde_json::from_slice::<Value>(&body)
            .ok()
            .is_some_and(|b| b["error"].is_string());
        if !(json_type && is_error_body) {
            push_example(&mut self.non_json_errors, describe_interaction(interaction));
        }
    }
}

/// Counts one more and keeps the first three examples.
fn push_example(into: &mut (u64, Vec<String>), example: String) {
    into.0 += 1;
    if into.1.len() < 3 {
        into.1.push(example);
    }
}

/// `CODE title: message; METHOD uri body -> status body`.
fn describe_failure(failure: &Value, interaction: Option<&Value>) -> String {
    let message = failure["message"].as_str().unwrap_or("").replace('\n', " ");
    format!(
        "{} {}: {}; {}",
        failure["code"].as_str().unwrap_or("?"),
        failure["title"].as_str().unwrap_or("?"),
        shorten(message.trim(), 200),
        interaction.map_or_else(
            || "(no interaction recorded)".to_owned(),
            describe_interaction
        )
    )
}

/// `METHOD uri body -> status body`, bodies shortened.
fn describe_interaction(interaction: &Value) -> String {
    let request = &interaction["request"];
    let body = decode_body(&request["body"]);
    let response = &interaction["response"];
    format!(
        "{} {}{} -> {}",
        request["method"].as_str().unwrap_or("?"),
        request["uri"].as_str().unwrap_or("?"),
        if body.is_empty() {
            String::new()
        } else {
            format!(" {}", shorten(&String::from_utf8_lossy(&body), 200))
        },
        match response["status_code"].as_u64() {
            Some(status) => format!(
                "{status} {}",
                shorten(
                    &String::from_utf8_lossy(&decode_body(&response["content"])),
                    200
                )
            ),
            None => "no response".to_owned(),
        }
    )
}

/// Records the run's outcome: completion, coverage, server errors, error bodies, and each check.
fn judge(s: &mut Scenario, report: &Value, found: &Findings, exit: ExitStatus) {
    let count = |pointer: &str| report.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let selected = count("/operations/selected");
    let tested = count("/operations/tested");
    let generated = count("/test_cases/generated");
    s.figure("operations tested", format!("{tested} of {selected}"));
    s.figure("test cases generated", generated);
    s.figure(
        "requests with a response",
        found.requests - found.unanswered,
    );
    s.figure(
        "responses by status",
        found
            .statuses
            .iter()
            .map(|(status, n)| format!("{status}: {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    s.figure("server errors (5xx)", found.server_errors.0);
    s.figure(
        "unique failures (schemathesis' own count)",
        count("/test_cases/unique_failures"),
    );
    for failure in report["failures"].as_array().into_iter().flatten() {
        s.figure(
            format!(
                "{} {}",
                failure["code"].as_str().unwrap_or("?"),
                failure["title"].as_str().unwrap_or("?")
            ),
            format!(
                "{} unique, on {} operations",
                failure["count"],
                failure["operations"].as_array().map_or(0, Vec::len)
            ),
        );
    }
    for (check, (passed, failed)) in &found.runs {
        s.figure(
            format!("check {check}"),
            format!("{failed} failed of {}", passed + failed),
        );
    }

    let complete = report["complete"].as_bool() == Some(true);
    let stop = report["stop_reason"].as_str().unwrap_or("?");
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    // Exit 1 means "failures found", which the checks below report one by one.
    s.check(
        "schemathesis ran to completion without errors",
        complete && stop == "completed" && errors.is_empty() && matches!(exit.code(), Some(0 | 1)),
        format!(
            "exit code {}, stop reason {stop}, {} errors{}",
            exit.code()
                .map_or_else(|| exit.to_string(), |c| c.to_string()),
            errors.len(),
            errors
                .first()
                .map(|e| format!(", e.g. {}", shorten(&e.to_string(), 300)))
                .unwrap_or_default()
        ),
    );
    s.check(
        "every operation of the OpenAPI description was tested",
        selected > 0 && tested == selected,
        format!("{tested} of {selected}, {generated} test cases"),
    );
    s.check(
        "no server errors (5xx) from fuzzed requests",
        found.server_errors.0 == 0
            && found
                .runs
                .get("not_a_server_error")
                .is_some_and(|r| r.1 == 0),
        format!(
            "{} of {} responses{}",
            found.server_errors.0,
            found.requests - found.unanswered,
            examples_text(&found.server_errors.1)
        ),
    );
    s.check(
        "every fuzzed request got a response",
        found.unanswered == 0,
        format!(
            "{} of {} without a response",
            found.unanswered, found.requests
        ),
    );
    s.check(
        "every error response is JSON {\"error\": string}",
        found.error_responses > 0 && found.non_json_errors.0 == 0,
        format!(
            "{} of {} error responses are not{}",
            found.non_json_errors.0,
            found.error_responses,
            examples_text(&found.non_json_errors.1)
        ),
    );
    for check in ["content_type_conformance", "response_schema_conformance"] {
        let on_errors = found.on_errors.get(check).copied().unwrap_or(0);
        s.check(
            format!("{check} ran on the error responses"),
            on_errors > 0,
            format!(
                "on {on_errors} error responses, {} runs in all",
                found.runs.get(check).map_or(0, |r| r.0 + r.1)
            ),
        );
    }

    for (check, (passed, failed)) in &found.runs {
        let seen = if *failed == 0 {
            format!("passed {passed} times")
        } else {
            let operations = found.examples.get(check).cloned().unwrap_or_default();
            for (operation, example) in &operations {
                say(&format!("    {check} on {operation}: {example}"));
            }
            let example = operations
                .iter()
                .next()
                .map(|(operation, e)| format!("; e.g. {operation}: {e}"))
                .unwrap_or_default();
            format!(
                "{failed} of {} runs failed, on {} operations ({}){example}",
                passed + failed,
                operations.len(),
                shorten(
                    &operations.keys().cloned().collect::<Vec<_>>().join(", "),
                    300
                ),
            )
        };
        s.check(format!("schemathesis check {check}"), *failed == 0, seen);
    }
}

/// `; e.g. A | B` for a few examples, or nothing.
fn examples_text(examples: &[String]) -> String {
    if examples.is_empty() {
        String::new()
    } else {
        format!("; e.g. {}", examples.join(" | "))
    }
}

/// A recorded body (`{"$base64": ...}` in the NDJSON events); empty when there is none.
fn decode_body(content: &Value) -> Vec<u8> {
    match content {
        Value::Object(map) => map
            .get("$base64")
            .and_then(Value::as_str)
            .map(base64_decode)
            .unwrap_or_default(),
        Value::String(text) => text.as_bytes().to_vec(),
        _ => Vec::new(),
    }
}

/// Standard base64 (padding optional); characters outside the alphabet are skipped.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0_u32, 0_u32);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// At most `max` characters of `text`, with `...` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}...", text.chars().take(max).collect::<String>())
    }
}

/// `12 ms` or `1.2 s`.
fn millis(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(base64_decode("eyJlcnJvciI6IngifQ=="), br#"{"error":"x"}"#);
        assert_eq!(base64_decode("YWI"), b"ab");
        assert_eq!(base64_decode(""), b"");
    }

    #[test]
    fn responses_are_parsed_by_length_and_by_chunks() {
        let by_length = b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 13\r\ncontent-type: application/json\r\n\r\n{\"error\":\"x\"}";
        let a = parse_response(by_length, Close::Closed, Duration::ZERO);
        assert_eq!(a.status, Some(413));
        assert!(a.complete && a.is_json_error() && a.is_clean());
        let chunked =
            b"HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let a = parse_response(chunked, Close::Open, Duration::ZERO);
        assert_eq!((a.body.as_slice(), a.complete), (&b"abc"[..], true));
        assert!(a.is_clean() && !a.is_json_error());
    }

    #[test]
    fn hangs_server_errors_and_garbage_are_not_clean() {
        assert!(!parse_response(b"", Close::Open, Duration::ZERO).is_clean());
        assert!(parse_response(b"", Close::Reset, Duration::ZERO).is_rejection());
        let five = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n";
        assert!(!parse_response(five, Close::Closed, Duration::ZERO).is_clean());
        assert!(!parse_response(b"SSH-2.0\r\n\r\n", Close::Closed, Duration::ZERO).is_clean());
        let partial = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 10\r\n\r\nabc";
        assert!(!parse_response(partial, Close::Open, Duration::ZERO).is_clean());
    }
}
