//! A lean HTTP/1.1 load generator for the search workload: kept-alive plain connections, one
//! per concurrent loop, and a request body serialized once.
//!
//! The tool shares the machine's two cores with the server and its database, so every
//! microsecond the load generator spends is one the server does not get. A general-purpose
//! client (pooling, redirects, header maps, JSON per request) cost about 50 µs of CPU per
//! request, a fifth of a cheap search; this one does what `wrk` does and no more.

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{SendRequest, handshake};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One POST, built once and sent many times over kept-alive connections.
pub struct LeanPost {
    addr: SocketAddr,
    host: HeaderValue,
    path: String,
    authorization: HeaderValue,
    body: Bytes,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
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
        Ok(Self {
            addr,
            host: HeaderValue::from_str(authority)?,
            path: path.to_owned(),
            authorization: HeaderValue::from_str(&format!("Bearer {key}"))?,
            body: Bytes::from(serde_json::to_vec(body)?),
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
        let request = Request::builder()
            .method(Method::POST)
            .uri(&self.path)
            .header(HOST, self.host.clone())
            .header(AUTHORIZATION, self.authorization.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(Full::new(self.body.clone()));
        let Ok(request) = request else { return false };
        let Ok(response) = connection.send_request(request).await else {
            return false;
        };
        let ok = response.status() == hyper::StatusCode::OK;
        if response.into_body().collect().await.is_err() {
            return false;
        }
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(connection);
        ok
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>> {
        let stream = TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }
}
