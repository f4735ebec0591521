//! A lean HTTP/1.1 load generator for the search workload: kept-alive plain connections, one
//! per concurrent loop, and the whole request serialized once.
//!
//! The tool shares the machine's two cores with the server and its database, so every
//! microsecond the load generator spends is one the server does not get. A general-purpose
//! client does work per request the measurement does not need (pooling, redirects, header
//! maps, JSON per request), and hyper's connection API still adds a connection task per
//! socket, a channel and a wake-up between it and the caller; their cost per request is in
//! docs/benchmarks.md, "Method of the benchmark tool". This one does what `wrk` does and no
//! more: it writes the prepared bytes on the socket and reads the answer on the caller's task,
//! parsing only the status line and the headers (`httparse`) to find where the body ends.

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Most response headers read; the server sends about ten.
const MAX_HEADERS: usize = 32;

/// Largest response head accepted before the connection is given up as broken.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// One POST, built once and sent many times over kept-alive connections.
pub struct LeanPost {
    addr: SocketAddr,
    request: Vec<u8>,
    idle: Mutex<Vec<Connection>>,
}

/// A kept-alive connection and the bytes read past the last answer (none when the server
/// answers one request at a time, as here).
struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl LeanPost {
    /// `POST {base}{path}` with a bearer key and a JSON body; `base` is `http://host:port`.
    pub fn new(base: &str, path: &str, key: &str, body: &serde_json::Value) -> Result<Self> {
        let authority = base
            .strip_prefix("http://")
            .context("the server's base URL is not plain http")?;
        let addr: SocketAddr = authority
            .parse()
            .with_context(|| format!("the server's address {authority}"))?;
        let body = serde_json::to_vec(body)?;
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(&body);
        Ok(Self {
            addr,
            request,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Sends the request once and reads the whole answer: whether it was a 200.
    pub async fn send(&self) -> bool {
        let connection = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut connection = match connection {
            Some(connection) => connection,
            None => match self.connect().await {
                Ok(connection) => connection,
                Err(_) => return false,
            },
        };
        match connection.exchange(&self.request).await {
            Ok(answer) => {
                if answer.keep_alive {
                    self.idle
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(connection);
                }
                answer.status == 200
            }
            // The connection is dropped: its state is unknown.
            Err(_) => false,
        }
    }

    async fn connect(&self) -> Result<Connection> {
        let stream = TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            stream,
            buffer: Vec::with_capacity(4096),
        })
    }
}

/// What the exchange tells of the answer.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    keep_alive: bool,
}

impl Connection {
    /// Writes `request` and reads one answer, body included.
    async fn exchange(&mut self, request: &[u8]) -> Result<Answer> {
        self.stream.write_all(request).await?;
        let (answer, head, body) = loop {
            if let Some(parsed) = parse_head(&self.buffer)? {
                break parsed;
            }
            if self.buffer.len() > MAX_HEAD_BYTES {
                bail!("the response head is over {MAX_HEAD_BYTES} bytes");
            }
            self.read_more().await?;
        };
        while self.buffer.len() < head + body {
            self.read_more().await?;
        }
        self.buffer.drain(..head + body);
        Ok(answer)
    }

    async fn read_more(&mut self) -> Result<()> {
        self.buffer.reserve(4096);
        if self.stream.read_buf(&mut self.buffer).await? == 0 {
            bail!("the server closed the connection");
        }
        Ok(())
    }
}

/// The answer's status and connection state, the head's length and the body's (from
/// `Content-Length`), once `bytes` hold the whole head; `None` while they do not.
fn parse_head(bytes: &[u8]) -> Result<Option<(Answer, usize, usize)>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(bytes)? {
        httparse::Status::Complete(head) => head,
        httparse::Status::Partial => return Ok(None),
    };
    let mut body = None;
    let mut keep_alive = response.version == Some(1);
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            body = Some(std::str::from_utf8(header.value)?.trim().parse::<usize>()?);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            bail!("a chunked answer (the load generator reads sized bodies only)");
        } else if header.name.eq_ignore_ascii_case("connection") {
            keep_alive = !header.value.eq_ignore_ascii_case(b"close");
        }
    }
    let answer = Answer {
        status: response.code.context("a response without a status")?,
        keep_alive,
    };
    Ok(Some((answer, head, body.unwrap_or(0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_read_only_once_complete_and_gives_the_body_length() {
        let answer =
            b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\ncontent-type: application/json\r\n\r\n";
        assert_eq!(parse_head(&answer[..20]).unwrap(), None);
        let (parsed, head, body) = parse_head(answer).unwrap().unwrap();
        assert_eq!(
            parsed,
            Answer {
                status: 200,
                keep_alive: true
            }
        );
        assert_eq!((head, body), (answer.len(), 12));
    }

    #[test]
    fn a_closing_or_chunked_answer_is_told_apart() {
        let closing =
            b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\ncontent-length: 2\r\n\r\n{}";
        let (parsed, _, body) = parse_head(closing).unwrap().unwrap();
        assert_eq!(
            parsed,
            Answer {
                status: 503,
                keep_alive: false
            }
        );
        assert_eq!(body, 2);
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
        assert!(parse_head(chunked).is_err());
    }

    #[tokio::test]
    async fn answers_are_read_whole_over_one_kept_alive_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut buffer = [0; 1024];
            // Three requests on the one connection; the second answer arrives in two writes.
            for answer in [
                &[&b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"[..]][..],
                &[
                    &b"HTTP/1.1 200 OK\r\ncontent-le"[..],
                    b"ngth: 5\r\n\r\n[1,2]",
                ],
                &[&b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}"[..]],
            ] {
                let n = socket.read(&mut buffer).await.unwrap();
                seen.push(buffer[..n].to_vec());
                for part in answer {
                    socket.write_all(part).await.unwrap();
                    socket.flush().await.unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            }
            seen
        });
        let post = LeanPost::new(
            &format!("http://{addr}"),
            "/find",
            "k",
            &serde_json::json!({"name": "x"}),
        )
        .unwrap();
        assert!(post.send().await);
        assert!(post.send().await);
        assert!(!post.send().await);
        let seen = server.await.unwrap();
        let expected = b"POST /find HTTP/1.1\r\nHost: ".to_vec();
        assert!(seen.iter().all(|r| r.starts_with(&expected)));
        assert!(seen[0].ends_with(b"Content-Length: 12\r\n\r\n{\"name\":\"x\"}"));
        assert_eq!(post.idle.lock().unwrap().len(), 1);
    }
}
