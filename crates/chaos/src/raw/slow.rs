//! The raw cases of slow clients: a request head (slow-loris) or a request body sent one byte at
//! a time. The server must cut them off within a bounded time and keep answering everyone else
//! meanwhile.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use timetrack_testkit::ServerProcess;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::http::{Answer, Close, parse_response};
use super::{HEALTH_LIMIT, Target, health, healthy_after, millis};
use crate::scenario::{Scenario, percentile};

/// A slow client must be cut off within this (actix's head timeout is 5 s).
const SLOW_LIMIT: Duration = Duration::from_secs(15);
/// How much longer than `SLOW_LIMIT` a slow connection is kept, so a late cut shows as late
/// rather than as a hang.
const WAIT_MORE: Duration = Duration::from_secs(5);
/// How long after a whole answer the close that should follow it is waited for.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// The pause between two bytes of a slow request.
const DRIP: Duration = Duration::from_millis(500);
/// A health check during a slow attack must answer within this.
const PROMPT: Duration = Duration::from_secs(1);
/// Slow-loris connections held open at once in the second attack.
pub const LORIS_CROWD: usize = 50;

/// What one dripping connection saw.
#[derive(Debug)]
struct Dripped {
    connected: bool,
    /// When the server closed or reset it (or answered, when asked to stop there), from the
    /// connect; `None`: still open at the end of the wait.
    cut_after: Option<Duration>,
    /// What came back, read as a response; its `close` is `Open` when the wait ran out, or when
    /// the connection stayed open after a whole answer.
    answer: Answer,
    /// Bytes dripped before the cut.
    sent: usize,
}

impl Dripped {
    /// Cut off as a slow body must be: within `SLOW_LIMIT`, a 408 with a JSON error, or a close
    /// without an answer.
    fn cut_off_in_time(&self) -> bool {
        let a = &self.answer;
        self.connected
            && self.cut_after.is_some_and(|d| d <= SLOW_LIMIT)
            && a.is_clean()
            && match a.status {
                Some(status) => status == 408 && a.is_json_error(),
                None => a.close != Close::Open,
            }
    }
}

/// Connects, writes `upfront` at once, then `dripped` one byte every `DRIP` (and `a`s after it,
/// never finishing), while reading what the server sends. Ends when the server closes or resets
/// the connection, when a write fails, at a whole answer when `until_answer` (the time taken is
/// then the answer's, and how the connection ended is looked at for `CLOSE_GRACE` more), or
/// `SLOW_LIMIT` plus `WAIT_MORE` after the start.
async fn drip(
    addr: String,
    upfront: Vec<u8>,
    dripped: &'static [u8],
    until_answer: bool,
) -> Dripped {
    let started = Instant::now();
    let Ok(Ok(stream)) = tokio::time::timeout(HEALTH_LIMIT, TcpStream::connect(&addr)).await else {
        return Dripped {
            connected: false,
            cut_after: None,
            answer: parse_response(b"", Close::Open, started.elapsed()),
            sent: 0,
        };
    };
    let (mut reader, mut writer) = stream.into_split();
    let mut sent = 0;
    let mut received = Vec::new();
    let mut answered_at = None;
    let ended = {
        let drip = async {
            if writer.write_all(&upfront).await.is_err() {
                return;
            }
            loop {
                let byte = dripped.get(sent).copied().unwrap_or(b'a');
                if writer.write_all(&[byte]).await.is_err() {
                    return;
                }
                sent += 1;
                tokio::time::sleep(DRIP).await;
            }
        };
        let watch = async {
            let mut chunk = [0_u8; 4096];
            loop {
                match reader.read(&mut chunk).await {
                    Ok(0) => return Close::Closed,
                    Ok(n) => received.extend_from_slice(&chunk[..n]),
                    Err(_) => return Close::Reset,
                }
                if until_answer && parse_response(&received, Close::Open, Duration::ZERO).complete {
                    answered_at = Some(started.elapsed());
                    // The request said `Connection: close`: a moment for the close that follows.
                    let more = tokio::time::timeout(CLOSE_GRACE, reader.read(&mut chunk)).await;
                    return match more {
                        Ok(Ok(0)) => Close::Closed,
                        Ok(Err(_)) => Close::Reset,
                        _ => Close::Open,
                    };
                }
            }
        };
        tokio::select! {
            // A write fails once the server has reset the connection.
            () = drip => Some(Close::Reset),
            close = watch => Some(close),
            () = tokio::time::sleep(SLOW_LIMIT + WAIT_MORE) => None,
        }
    };
    let elapsed = answered_at.unwrap_or_else(|| started.elapsed());
    Dripped {
        connected: true,
        cut_after: (ended.is_some() || answered_at.is_some()).then_some(elapsed),
        answer: parse_response(&received, ended.unwrap_or(Close::Open), elapsed),
        sent,
    }
}

/// Probes the health check every 400 ms, from 700 ms on (once the drips have begun), until every
/// one of `attackers` is done; the latencies in seconds and the failures.
async fn probe_while<T>(
    target: &Target,
    base: &str,
    attackers: &[JoinHandle<T>],
) -> (Vec<f64>, Vec<String>) {
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    while attackers.iter().any(|a| !a.is_finished()) {
        match health(target, base).await {
            Ok(took) => latencies.push(took.as_secs_f64()),
            Err(err) => failures.push(err),
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    (latencies, failures)
}

/// Records that every probe answered within `PROMPT`; the slowest, in seconds.
fn prompt_meanwhile(s: &mut Scenario, what: &str, latencies: &[f64], failures: &[String]) -> f64 {
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
            percentile(latencies, 50.0) * 1000.0,
            slowest * 1000.0,
            if failures.is_empty() {
                String::new()
            } else {
                format!(", failed: {}", failures.join("; "))
            }
        ),
    );
    slowest
}

/// Case 4a: `connections` slow-loris connections at once, each sending a request head one byte
/// every `DRIP` and never finishing it; each must be cut off within `SLOW_LIMIT`, and the health
/// check must answer within `PROMPT` all along.
pub async fn slow_loris(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
    connections: usize,
) -> Result<()> {
    let what = format!("slow-loris, {connections} connection(s), a byte every 500 ms");
    let head =
        b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow-loris\r\nX-Padding: ";
    let attackers: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(drip(target.addr.clone(), Vec::new(), head, false)))
        .collect();
    let (latencies, failures) = probe_while(target, &server.base, &attackers).await;
    let mut results = Vec::new();
    for attacker in attackers {
        results.push(attacker.await?);
    }

    let connected = results.iter().filter(|r| r.connected).count();
    let cuts: Vec<f64> = results
        .iter()
        .filter_map(|r| r.cut_after)
        .filter(|d| *d <= SLOW_LIMIT)
        .map(|d| d.as_secs_f64())
        .collect();
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for r in &results {
        let key = r
            .answer
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
            SLOW_LIMIT.as_secs()
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
    let slowest = prompt_meanwhile(s, &what, &latencies, &failures);
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

/// Case 4b: a whole, authenticated head of `POST /api/clients` with `Content-Length: 1000`, then
/// the body one byte every `DRIP`. Within `SLOW_LIMIT` the server must answer 408 with a JSON
/// error or close the connection, and the health check must answer within `PROMPT` all along.
pub async fn slow_body(
    s: &mut Scenario,
    server: &mut ServerProcess,
    target: &Target,
) -> Result<()> {
    let what = "slow body, Content-Length 1000, a byte every 500 ms";
    let head = target.request(
        "POST",
        "/api/clients",
        &[
            target.auth(),
            ("Content-Type", "application/json".to_owned()),
            ("Content-Length", "1000".to_owned()),
        ],
        b"",
    );
    let attacker = tokio::spawn(drip(
        target.addr.clone(),
        head,
        br#"{"name":"Slow body "#,
        true,
    ));
    let (latencies, failures) =
        probe_while(target, &server.base, std::slice::from_ref(&attacker)).await;
    let dripped = attacker.await?;

    s.check(
        format!(
            "{what}: 408 JSON or closed within {} s",
            SLOW_LIMIT.as_secs()
        ),
        dripped.cut_off_in_time(),
        if dripped.connected {
            format!(
                "{}; {} body bytes sent",
                dripped.answer.summary(),
                dripped.sent
            )
        } else {
            "could not connect".to_owned()
        },
    );
    let slowest = prompt_meanwhile(s, what, &latencies, &failures);
    s.figure(
        "slow body: answered or cut off after",
        dripped.cut_after.map_or_else(
            || format!("still open after {} s", (SLOW_LIMIT + WAIT_MORE).as_secs()),
            millis,
        ),
    );
    s.figure(
        "slow body: health latency meanwhile (max)",
        format!("{:.0} ms", slowest * 1000.0),
    );
    healthy_after(s, server, target, what).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

    use super::*;

    const JSON_408: &[u8] = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: 13\r\n\r\n{\"error\":\"x\"}";

    fn dripped(received: &[u8], close: Close, cut_after: Option<Duration>) -> Dripped {
        let elapsed = cut_after.unwrap_or(SLOW_LIMIT + WAIT_MORE);
        Dripped {
            connected: true,
            cut_after,
            answer: parse_response(received, close, elapsed),
            sent: 20,
        }
    }

    #[test]
    fn a_slow_body_is_cut_off_by_a_json_408_or_a_close_in_time() {
        let at = Some(Duration::from_secs(10));
        assert!(dripped(JSON_408, Close::Closed, at).cut_off_in_time());
        assert!(dripped(JSON_408, Close::Open, at).cut_off_in_time());
        assert!(dripped(b"", Close::Closed, at).cut_off_in_time());
        assert!(dripped(b"", Close::Reset, at).cut_off_in_time());
    }

    #[test]
    fn a_slow_body_left_hanging_or_answered_late_or_otherwise_is_not_cut_off() {
        let at = Some(Duration::from_secs(10));
        assert!(!dripped(b"", Close::Open, None).cut_off_in_time());
        let late = Some(SLOW_LIMIT + Duration::from_millis(1));
        assert!(!dripped(JSON_408, Close::Closed, late).cut_off_in_time());
        let bare = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n\r\n";
        assert!(!dripped(bare, Close::Closed, at).cut_off_in_time());
        let other = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 13\r\n\r\n{\"error\":\"x\"}";
        assert!(!dripped(other, Close::Closed, at).cut_off_in_time());
        let head_only = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 13\r\n\r\n";
        assert!(!dripped(head_only, Close::Open, None).cut_off_in_time());
    }

    #[tokio::test]
    async fn dripping_stops_at_a_whole_answer_and_sees_the_connection_end_after_it() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = [0_u8; 5];
            stream.read_exact(&mut head).await.unwrap();
            stream.write_all(JSON_408).await.unwrap();
            head
        });
        let seen = drip(addr, b"HEAD ".to_vec(), b"{", true).await;
        assert_eq!(&server.await.unwrap(), b"HEAD ");
        // Closed with the dripped byte unread, so the kernel may well send a reset.
        assert_eq!(seen.answer.status, Some(408));
        assert_ne!(seen.answer.close, Close::Open);
        assert!(seen.cut_after.is_some_and(|d| d < CLOSE_GRACE));
        assert!(seen.cut_off_in_time(), "{}", seen.answer.summary());
    }
}
