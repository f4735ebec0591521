//! A JSON-RPC client of a remote timetrack's MCP endpoint (`POST <base>/mcp`), for `timetrack
//! mcp`, which serves the same tools over stdio to a desktop assistant. The remote server is
//! stateless and answers each message with one JSON body, so one message is one request.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Request;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// The most bytes of one answer read (a page of 200 entries is far below it).
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// How long one message may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Why a message did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The remote answered an HTTP error: its status and the `error` text of its JSON body (or
    /// the status's reason).
    #[error("{url} answered {status}: {message}")]
    Refused {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What the remote said.
        message: String,
    },
    /// The remote could not be reached, or its answer was not JSON.
    #[error("{0:#}")]
    Unreachable(anyhow::Error),
}

/// The client: one endpoint, one key.
#[derive(Clone)]
pub struct McpRelay {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    endpoint: Arc<str>,
    authorization: HeaderValue,
}

impl std::fmt::Debug for McpRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpRelay")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl McpRelay {
    /// A client of `<base_url>/mcp` sending `api_key` as a bearer token. `base_url` is http or
    /// https (the system's roots are trusted); anything else is refused here.
    pub fn new(base_url: &str, api_key: &str) -> Result<Self> {
        let base = base_url.trim().trim_end_matches('/');
        let endpoint = format!("{base}/mcp");
        let uri: hyper::Uri = endpoint
            .parse()
            .with_context(|| format!("--base-url {base_url:?} is not a URL"))?;
        anyhow::ensure!(
            matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some(),
            "--base-url must be an http:// or https:// address, such as https://timetrack.example.com (got {base_url:?})"
        );
        let mut authorization = HeaderValue::from_str(&format!("Bearer {}", api_key.trim()))
            .context("TIMETRACK_API_KEY holds characters a header cannot carry")?;
        authorization.set_sensitive(true);
        let tls = super::client_tls(None)?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build(https),
            endpoint: endpoint.into(),
            authorization,
        })
    }

    /// The endpoint messages go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Sends one JSON-RPC message; answers the remote's JSON-RPC response, or `None` for a
    /// notification (202, no body).
    pub async fn send(&self, message: &Value) -> Result<Option<Value>, RelayError> {
        tokio::time::timeout(TIMEOUT, self.exchange(message))
            .await
            .unwrap_or_else(|_| {
                Err(RelayError::Unreachable(anyhow::anyhow!(
                    "{} did not answer within {} s",
                    self.endpoint,
                    TIMEOUT.as_secs()
                )))
            })
    }

    async fn exchange(&self, message: &Value) -> Result<Option<Value>, RelayError> {
        let unreachable = |err: anyhow::Error| RelayError::Unreachable(err);
        let body = serde_json::to_vec(message)
            .context("encoding the message")
            .map_err(unreachable)?;
        let request = Request::post(&*self.endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .header(AUTHORIZATION, self.authorization.clone())
            .body(Full::new(Bytes::from(body)))
            .context("building the request")
            .map_err(unreachable)?;
        let response = self
            .client
            .request(request)
            .await
            .with_context(|| format!("{} cannot be reached", self.endpoint))
            .map_err(unreachable)?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| {
                unreachable(anyhow::anyhow!(
                    "reading the answer of {}: {e}",
                    self.endpoint
                ))
            })?
            .to_bytes();
        if !status.is_success() {
            let message = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
            return Err(RelayError::Refused {
                url: self.endpoint.to_string(),
                status: status.as_u16(),
                message,
            });
        }
        if bytes.is_empty() {
            return Ok(None);
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} answered something that is not JSON", self.endpoint))
            .map_err(unreachable)
    }
}
