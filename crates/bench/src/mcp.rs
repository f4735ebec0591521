//! The MCP server at `/mcp`: an assistant's `start_timer` from the call until the webhook has the
//! timer, at a steady rate; and what the protocol layer costs per call against the same REST
//! call (the same handler behind both), for a read (`whoami` / `GET /api/me`) and a write
//! (`start_timer` / `POST /api/time-entries/start`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::cpu::CpuSample;
use crate::delivery::{wait_for, workspace};
use crate::setup::{Environment, Server};
use crate::stats::{Latencies, Repeated};
use crate::{Sizes, progress};

/// How long the workload waits for the next delivery before it counts the rest as lost.
const PATIENCE: Duration = Duration::from_secs(30);

/// Members of the end-to-end part's workspace, whose keys take the calls in turn. Each member's
/// assistant waits for a call's answer before it makes the next, as an assistant does: a person
/// runs one timer at a time, and two starts of the same person at the same instant may be
/// refused ("The running timer kept changing; try again"), which is not what is measured here.
const MEMBERS: usize = 10;

/// The figures of the MCP workload.
#[derive(Debug, Clone, Default)]
pub struct Mcp {
    /// Calls a second of the end-to-end part.
    pub rate: u32,
    /// Calls made in each repetition.
    pub calls: usize,
    /// From sending the `tools/call` until the `TIMER_STARTED` delivery arrived, in ms.
    pub e2e_p50: Repeated,
    pub e2e_p95: Repeated,
    pub e2e_p99: Repeated,
    /// The call's own answer time, in ms.
    pub answer_p99: Repeated,
    /// Deliveries of answered calls that never arrived, and calls not answered with a timer.
    pub lost: usize,
    pub failed: usize,
    /// The same operation through REST and through MCP.
    pub overhead: Vec<Overhead>,
}

/// One operation through both doors: median answer times and the server's CPU per call.
#[derive(Debug, Clone, Default)]
pub struct Overhead {
    pub operation: &'static str,
    /// Median answer time per repetition, in µs.
    pub rest_us: Repeated,
    pub mcp_us: Repeated,
    /// The server's CPU per call per repetition, in µs.
    pub rest_cpu_us: Repeated,
    pub mcp_cpu_us: Repeated,
}

/// A JSON-RPC `tools/call` of `tool` with `arguments`, as an assistant sends it.
fn tool_call(id: u64, tool: &str, arguments: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    })
}

/// Sends `message` to `<base>/mcp` with `key`; the tool's structured result, or why there is
/// none (an HTTP error, an answer that is not JSON, a tool error), with what was answered.
async fn call_mcp(http: &reqwest::Client, base: &str, key: &str, message: &Value) -> Result<Value> {
    let res = http
        .post(format!("{base}/mcp"))
        .bearer_auth(key)
        .header("Accept", "application/json, text/event-stream")
        .json(message)
        .send()
        .await?;
    let status = res.status();
    let text = res.text().await?;
    let body = serde_json::from_str::<Value>(&text)
        .ok()
        .filter(|_| status == 200)
        .with_context(|| format!("/mcp answered {status}: {text}"))?;
    let result = &body["result"];
    anyhow::ensure!(result["isError"] != true, "tool error: {body}");
    Ok(result["structuredContent"].clone())
}

/// The workload.
pub async fn measure(env: &Environment, server: &Server, sizes: Sizes) -> Result<Mcp> {
    let mut figures = Mcp {
        rate: sizes.mcp_rate,
        calls: (u64::from(sizes.mcp_rate) * sizes.mcp_seconds) as usize,
        ..Mcp::default()
    };
    for run in 0..sizes.runs {
        end_to_end(env, server, sizes, run, &mut figures).await?;
    }
    for operation in ["whoami", "start_timer"] {
        figures
            .overhead
            .push(overhead(env, server, sizes, operation).await?);
    }
    Ok(figures)
}

/// One repetition of the end-to-end part: `start_timer` through `/mcp` at the rate, each timer
/// awaited at a webhook subscribed to `TIMER_STARTED`.
async fn end_to_end(
    env: &Environment,
    server: &Server,
    sizes: Sizes,
    run: usize,
    figures: &mut Mcp,
) -> Result<()> {
    let (account, tag) = workspace(env, &format!("mcp-{run}")).await?;
    let mut keys = vec![account.key.clone()];
    for _ in 1..MEMBERS {
        keys.push(env.account_in(&account.workspace_id).await?.key);
    }
    let turns: Vec<Arc<tokio::sync::Mutex<()>>> = (0..MEMBERS).map(|_| Arc::default()).collect();
    server
        .subscribe(
            &account.key,
            &env.receiver.url(&format!("/{tag}/0")),
            &["TIMER_STARTED"],
        )
        .await?;
    let before = env.receiver.count();
    // Entry id -> (sent, answered).
    let sent: Arc<Mutex<HashMap<String, (Instant, Instant)>>> = Arc::default();
    let failed: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / sizes.mcp_rate.max(1));
    let mut calls = Vec::new();
    for n in 0..figures.calls {
        ticker.tick().await;
        let (sent, failed) = (sent.clone(), failed.clone());
        let (server_http, base, key) = (
            server.http.clone(),
            server.base.clone(),
            keys[n % MEMBERS].clone(),
        );
        let turn = turns[n % MEMBERS].clone();
        let message = tool_call(
            n as u64,
            "start_timer",
            &json!({"description": format!("{tag} {n}")}),
        );
        calls.push(tokio::spawn(async move {
            let at = Instant::now();
            // The member's previous call answered first (the wait counts: it is measured from
            // the tick).
            let _turn = turn.lock().await;
            let answer = call_mcp(&server_http, &base, &key, &message).await;
            let answered = Instant::now();
            match answer {
                Ok(timer) if timer["id"].is_string() => {
                    let id = timer["id"].as_str().unwrap_or_default();
                    sent.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(id.to_owned(), (at, answered));
                }
                other => {
                    let why = other.map_or_else(|e| format!("{e:#}"), |b| b.to_string());
                    failed
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(why);
                }
            }
        }));
    }
    for call in calls {
        call.await?;
    }
    let sent = std::mem::take(&mut *sent.lock().unwrap_or_else(PoisonError::into_inner));
    let failures = std::mem::take(&mut *failed.lock().unwrap_or_else(PoisonError::into_inner));
    let failed = failures.len();
    if let Some(first) = failures.first() {
        progress(&format!(
            "mcp: {failed} calls failed, the first with {first}"
        ));
    }
    let received = wait_for(env, before, sent.len(), PATIENCE).await;
    let (mut e2e, mut answers) = (Latencies::default(), Latencies::default());
    let mut seen = std::collections::HashSet::new();
    for r in received.iter().filter(|r| r.path == format!("/{tag}/0")) {
        let Ok(body) = serde_json::from_slice::<Value>(&r.body) else {
            continue;
        };
        if let Some(id) = body["id"].as_str()
            && let Some((at, answered)) = sent.get(id)
            && seen.insert(id.to_owned())
        {
            e2e.push(r.at.saturating_duration_since(*at));
            answers.push(answered.saturating_duration_since(*at));
        }
    }
    let lost = sent.len() - seen.len();
    figures.lost += lost;
    figures.failed += failed;
    let (p50, p95, p99) = (
        e2e.percentile(50.0),
        e2e.percentile(95.0),
        e2e.percentile(99.0),
    );
    figures.e2e_p50.push(p50);
    figures.e2e_p95.push(p95);
    figures.e2e_p99.push(p99);
    figures.answer_p99.push(answers.percentile(99.0));
    progress(&format!(
        "mcp start_timer -> webhook at {}/s run {}: p50 {p50:.2} ms, p95 {p95:.2} ms, p99 {p99:.2} ms \
         (answer p99 {:.2} ms; {} samples, lost {lost}, failed calls {failed})",
        sizes.mcp_rate,
        run + 1,
        answers.percentile(99.0),
        e2e.0.len(),
    ));
    Ok(())
}

/// `operation` through REST and through MCP, `sizes.mcp_overhead_calls` calls each, one after
/// another, in each repetition.
async fn overhead(
    env: &Environment,
    server: &Server,
    sizes: Sizes,
    operation: &'static str,
) -> Result<Overhead> {
    let calls = sizes.mcp_overhead_calls;
    let mut figures = Overhead {
        operation,
        ..Overhead::default()
    };
    let (account, tag) = workspace(env, &format!("mcp-{operation}")).await?;
    let key = account.key.as_str();
    let rest = |n: usize| {
        let req = match operation {
            "whoami" => server.http.get(format!("{}/api/me", server.base)),
            _ => server
                .http
                .post(format!("{}/api/time-entries/start", server.base))
                .json(&json!({"description": format!("{tag} rest {n}")})),
        };
        async move {
            let res = req.bearer_auth(key).send().await?;
            let status = res.status();
            let body: Value = res.json().await?;
            anyhow::ensure!(status.is_success(), "REST {operation}: {status} {body}");
            Ok::<_, anyhow::Error>(())
        }
    };
    let mcp = |n: usize| {
        let arguments = match operation {
            "whoami" => json!({}),
            _ => json!({"description": format!("{tag} mcp {n}")}),
        };
        let message = tool_call(n as u64, operation, &arguments);
        async move {
            call_mcp(&server.http, &server.base, key, &message)
                .await
                .map(|_| ())
        }
    };
    // A few calls of each first, so that both doors start warm.
    for n in 0..10 {
        rest(n).await?;
        mcp(n).await?;
    }
    for _ in 0..sizes.runs {
        let (rest_us, rest_cpu_us) = block(server, calls, &rest).await?;
        let (mcp_us, mcp_cpu_us) = block(server, calls, &mcp).await?;
        figures.rest_us.push(rest_us);
        figures.rest_cpu_us.push(rest_cpu_us);
        figures.mcp_us.push(mcp_us);
        figures.mcp_cpu_us.push(mcp_cpu_us);
        progress(&format!(
            "mcp overhead {operation}: REST median {rest_us:.0} µs (server CPU {rest_cpu_us:.0} µs), \
             MCP median {mcp_us:.0} µs (server CPU {mcp_cpu_us:.0} µs) per call"
        ));
    }
    Ok(figures)
}

/// `calls` calls of `call` one after another: the median answer time and the server's CPU time
/// per call over the block, both in µs.
async fn block<F, Fut>(server: &Server, calls: usize, call: F) -> Result<(f64, f64)>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let mut times = Latencies::default();
    let cpu_before = CpuSample::now(server.pid());
    for n in 0..calls {
        let at = Instant::now();
        call(n).await?;
        times.push(at.elapsed());
    }
    let cpu = CpuSample::now(server.pid())
        .zip(cpu_before)
        .and_then(|(after, before)| before.per_request(&after, calls))
        .context("reading the server's CPU time")?;
    Ok((times.percentile(50.0) * 1_000.0, cpu.server))
}
