//! A JSON client of a remote timetrack, and through it the JSON-RPC client of its MCP endpoint
//! (`POST <base>/mcp`) for `timetrack mcp`, which serves the same tools over stdio to a desktop
//! assistant. The remote server is stateless and answers each message with one JSON body, so one
//! message is one request.

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

/// How long one request may take, connection included.
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

/// A JSON client of a remote timetrack: one base URL, one key. `timetrack mcp` relays through
/// it, and `timetrack listen` subscribes and unsubscribes with it.
#[derive(Clone)]
pub struct ApiClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    base: Arc<str>,
    authorization: HeaderValue,
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl ApiClient {
    /// A client of `base_url` sending `api_key` as a bearer token. `base_url` is http or https
    /// (the system's roots are trusted); anything else is refused here.
    pub fn new(base_url: &str, api_key: &str) -> Result<Self> {
        let base = base_url.trim().trim_end_matches('/');
        let uri: hyper::Uri = base
            .parse()
            .with_context(|| format!("--base-url {base_url:?} is not a URL"))?;
        anyhow::ensure!(
            matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some(),
            "--base-url must be an http:// or https:// address, such as https://timetrack.example.com (got {base_url:?})"
        );
        let mut authorization = HeaderValue::from_str(&format!("Bearer {}", api_key.trim()))
            .context("TIMETRACK_API_KEY holds characters a header cannot carry")?;
        authorization.set_sensitive(true);
        let tls = super::client_tls(&[])?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build(https),
            base: base.into(),
            authorization,
        })
    }

    /// The base URL, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends `body` (if any) as JSON to `method` `<base><path>`, accepting `accept`; answers the
    /// JSON body, or `None` for an empty one. An HTTP error is [`RelayError::Refused`] with the
    /// `error` text of its body.
    pub async fn call(
        &self,
        method: hyper::Method,
        path: &str,
        body: Option<&Value>,
        accept: &'static str,
    ) -> Result<Option<Value>, RelayError> {
        let url = format!("{}{path}", self.base);
        tokio::time::timeout(TIMEOUT, self.exchange(method, &url, body, accept))
            .await
            .unwrap_or_else(|_| {
                Err(RelayError::Unreachable(anyhow::anyhow!(
                    "{url} did not answer within {} s",
                    TIMEOUT.as_secs()
                )))
            })
    }

    async fn exchange(
        &self,
        method: hyper::Method,
        url: &str,
        body: Option<&Value>,
        accept: &'static str,
    ) -> Result<Option<Value>, RelayError> {
        let unreachable = |err: anyhow::Error| RelayError::Unreachable(err);
        let bytes = match body {
            Some(body) => serde_json::to_vec(body)
                .context("encoding the message")
                .map_err(unreachable)?,
            None => Vec::new(),
        };
        let mut request = Request::builder()
            .method(method)
            .uri(url)
            .header(ACCEPT, accept)
            .header(AUTHORIZATION, self.authorization.clone());
        if body.is_some() {
            request = request.header(CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(Full::new(Bytes::from(bytes)))
            .context("building the request")
            .map_err(unreachable)?;
        let response = self
            .client
            .request(request)
            .await
            .with_context(|| format!("{url} cannot be reached"))
            .map_err(unreachable)?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| unreachable(anyhow::anyhow!("reading the answer of {url}: {e}")))?
            .to_bytes();
        if !status.is_success() {
            let message = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
            return Err(RelayError::Refused {
                url: url.to_owned(),
                status: status.as_u16(),
                message,
            });
        }
        if bytes.is_empty() {
            return Ok(None);
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{url} answered something that is not JSON"))
            .map_err(unreachable)
    }
}

/// The client of a remote `/mcp`: one endpoint, one key.
#[derive(Debug, Clone)]
pub struct McpRelay {
    api: ApiClient,
    endpoint: Arc<str>,
}

impl McpRelay {
    /// A client of `<base_url>/mcp` sending `api_key` as a bearer token. `base_url` is http or
    /// https (the system's roots are trusted); anything else is refused here.
    pub fn new(base_url: &str, api_key: &str) -> Result<Self> {
        let api = ApiClient::new(base_url, api_key)?;
        let endpoint = format!("{}/mcp", api.base()).into();
        Ok(Self { api, endpoint })
    }

    /// The endpoint messages go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Sends one JSON-RPC message; answers the remote's JSON-RPC response, or `None` for a
    /// notification (202, no body).
    pub async fn send(&self, message: &Value) -> Result<Option<Value>, RelayError> {
        self.api
            .call(
                hyper::Method::POST,
                "/mcp",
                Some(message),
                "application/json, text/event-stream",
            )
            .await
    }
}
