//! One raw exchange: the bytes of a request sent on a new connection, and what came back read as
//! an HTTP/1.1 response and judged (answered, cut off, hung or garbled).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{HEALTH_LIMIT, millis};
use crate::scenario::shorten;

/// How long one raw exchange may take before it counts as a hang.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(10);

/// How the bytes of one raw request end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The write side stays open until the exchange ends.
    Open,
    /// The write side is shut once everything is sent: a client that gives up mid-request.
    HalfClose,
}

/// One raw request of a case.
#[derive(Debug)]
pub struct Raw {
    pub label: String,
    pub bytes: Vec<u8>,
    pub ending: Ending,
}

impl Raw {
    pub fn new(label: &str, bytes: Vec<u8>) -> Self {
        Self {
            label: label.to_owned(),
            bytes,
            ending: Ending::Open,
        }
    }
}

/// How the server left the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// Closed (FIN).
    Closed,
    /// Reset.
    Reset,
    /// Still open when the exchange's time ran out.
    Open,
}

/// What the server did with one raw request.
#[derive(Debug)]
pub struct Answer {
    /// The response's status, when a response head arrived.
    pub status: Option<u16>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// Bytes came back that are not an HTTP response.
    pub garbled: bool,
    /// The whole response arrived (its head and all of its body).
    pub complete: bool,
    pub close: Close,
    pub elapsed: Duration,
}

impl Answer {
    /// `{"error": <string>}` with a JSON content type.
    pub fn is_json_error(&self) -> bool {
        self.error_message().is_some()
    }

    /// The `error` string of a JSON error body.
    pub fn error_message(&self) -> Option<String> {
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
    pub fn is_clean(&self) -> bool {
        let answered = self.status.is_some() && self.complete;
        !self.garbled
            && self.status.is_none_or(|s| s < 500)
            && (answered || self.close != Close::Open)
    }

    /// Clean, and any answer a 4xx.
    pub fn is_rejection(&self) -> bool {
        self.is_clean() && self.status.is_none_or(|s| (400..500).contains(&s))
    }

    /// The status (with its JSON error if any), how the connection ended and the time taken.
    pub fn summary(&self) -> String {
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
pub async fn exchange(addr: &str, raw: &Raw) -> Result<Answer> {
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
pub fn parse_response(received: &[u8], close: Close, elapsed: Duration) -> Answer {
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

#[cfg(test)]
mod tests {
    use super::*;

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
