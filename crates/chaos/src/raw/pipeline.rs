//! The raw case of clients that pipeline requests and never read the answers: many connections
//! each writing `GET /api/health` after `GET /api/health` as fast as the socket takes them. The
//! server must hold its memory (answers it cannot send must stop it reading more) and keep
//! answering everyone else.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use timetrack_testkit::ServerProcess;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::{HEALTH_LIMIT, Target, healthy_after, millis};
use crate::scenario::{Scenario, percentile};

/// Connections that pipeline, full run and `--quick`.
const CONNECTIONS: (usize, usize) = (50, 20);
/// How long they write, full run and `--quick`.
const ATTACK: (Duration, Duration) = (Duration::from_secs(20), Duration::from_secs(8));
/// The server's resident memory must stay under this.
const RSS_LIMIT_MB: f64 = 300.0;
/// A health check during the attack must answer within this.
const PROMPT: Duration = Duration::from_secs(1);

/// What one pipelining connection did.
#[derive(Debug, Default)]
struct Pipelined {
    connected: bool,
    /// Bytes the socket accepted.
    written: usize,
    /// The write failed (the server closed or reset the connection).
    cut: bool,
}

/// Connects and writes pipelined health requests until `stop`, never reading; the read half is
/// kept (unread) until then, so the connection stays open.
async fn pipeline(addr: String, stop: Arc<AtomicBool>) -> Pipelined {
    let Ok(Ok(stream)) = tokio::time::timeout(HEALTH_LIMIT, TcpStream::connect(&addr)).await else {
        return Pipelined::default();
    };
    let (_unread, mut writer) = stream.into_split();
    let batch = "GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n".repeat(256);
    let mut done = Pipelined {
        connected: true,
        ..Pipelined::default()
    };
    while !stop.load(Ordering::SeqCst) {
        // Bounded, so a socket the server no longer reads cannot keep this past the stop.
        match tokio::time::timeout(Duration::from_millis(200), writer.write(batch.as_bytes())).await
        {
            Err(_) => {}
            Ok(Ok(0) | Err(_)) => {
                done.cut = true;
                break;
            }
            Ok(Ok(n)) => done.written += n,
        }
    }
    done
}

/// Case 8: pipelining clients that never read, while the server's memory is sampled from
/// `/proc` and the health check is timed once a second on a fresh connection.
pub async fn never_read(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
    quick: bool,
) -> Result<()> {
    let (connections, attack) = if quick {
        (CONNECTIONS.1, ATTACK.1)
    } else {
        (CONNECTIONS.0, ATTACK.0)
    };
    let what = format!(
        "{connections} connections pipelining GET /api/health for {} s, never reading",
        attack.as_secs()
    );
    let rss_before = server.memory().map(|m| m.rss_mb()).unwrap_or(0.0);
    let stop = Arc::new(AtomicBool::new(false));
    let attackers: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(pipeline(target.addr.clone(), stop.clone())))
        .collect();

    let started = Instant::now();
    let mut peak_rss = rss_before;
    let mut memory_errors = Vec::new();
    let mut probes = Vec::new();
    let mut next_probe = started + Duration::from_millis(500);
    while started.elapsed() < attack {
        match server.memory() {
            Ok(m) => peak_rss = peak_rss.max(m.rss_mb()),
            Err(err) => memory_errors.push(err.to_string()),
        }
        if Instant::now() >= next_probe {
            next_probe += Duration::from_secs(1);
            // Each probe on its own task, so one that hangs does not delay the next.
            let (probe, base) = (target.probe.clone(), server.base.clone());
            let at = started.elapsed();
            probes.push(tokio::spawn(async move {
                let sent = Instant::now();
                let outcome = match probe.get(format!("{base}/api/health")).send().await {
                    Ok(res) if res.status() == 200 => Ok(sent.elapsed()),
                    Ok(res) => Err(format!("{} after {}", res.status(), millis(sent.elapsed()))),
                    Err(_) => Err(format!("no answer after {}", millis(sent.elapsed()))),
                };
                (at, outcome)
            }));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let mut results = Vec::new();
    for attacker in attackers {
        results.push(attacker.await?);
    }
    let probes_sent = probes.len();
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    for probe in probes {
        match probe.await? {
            (_, Ok(took)) if took < PROMPT => latencies.push(took.as_secs_f64()),
            (at, Ok(took)) => {
                latencies.push(took.as_secs_f64());
                failures.push(format!(
                    "at {:.1} s: 200 after {}",
                    at.as_secs_f64(),
                    millis(took)
                ));
            }
            (at, Err(err)) => failures.push(format!("at {:.1} s: {err}", at.as_secs_f64())),
        }
    }
    // The kernel's high-water mark covers the process's whole life (earlier cases included):
    // shown, not judged.
    let lifetime_peak = server.memory().map(|m| m.peak_mb()).unwrap_or(0.0);

    let connected = results.iter().filter(|r| r.connected).count();
    let cut = results.iter().filter(|r| r.cut).count();
    let written: usize = results.iter().map(|r| r.written).sum();
    let requests = written / "GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n".len();
    let slowest = latencies.iter().copied().fold(0.0, f64::max);
    s.figure(
        "pipelining without reading: requests written (connections cut by the server)",
        format!(
            "{requests} ({} MB) on {connected} connections ({cut} cut)",
            written / 1_000_000
        ),
    );
    s.figure(
        "pipelining without reading: server RSS before / peak sampled / process high-water mark",
        format!("{rss_before:.0} / {peak_rss:.0} / {lifetime_peak:.0} MB"),
    );
    s.figure("pipelining without reading: worst health latency", {
        let unanswered = probes_sent - latencies.len();
        if unanswered == 0 {
            millis(Duration::from_secs_f64(slowest))
        } else {
            format!(
                "{unanswered} of {probes_sent} probes unanswered within {} s (answered: max {})",
                HEALTH_LIMIT.as_secs(),
                millis(Duration::from_secs_f64(slowest))
            )
        }
    });
    s.check_eq(
        format!("{what}: every connection accepted"),
        connected,
        connections,
    );
    s.check(
        format!("{what}: server RSS stays under {RSS_LIMIT_MB:.0} MB"),
        memory_errors.is_empty() && peak_rss < RSS_LIMIT_MB,
        if memory_errors.is_empty() {
            format!("peak {peak_rss:.0} MB (before: {rss_before:.0} MB)")
        } else {
            format!("memory not readable: {}", memory_errors.join("; "))
        },
    );
    s.check(
        format!(
            "{what}: health answers 200 in < {} s every second meanwhile",
            PROMPT.as_secs()
        ),
        failures.is_empty() && !latencies.is_empty() && slowest < PROMPT.as_secs_f64(),
        format!(
            "{probes_sent} probes, p50 {:.0} ms, max {:.0} ms of those answered{}",
            percentile(&latencies, 50.0) * 1000.0,
            slowest * 1000.0,
            if failures.is_empty() {
                String::new()
            } else {
                format!(", failed: {}", failures.join("; "))
            }
        ),
    );
    healthy_after(s, server, target, &what).await;
    Ok(())
}
