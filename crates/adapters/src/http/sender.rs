//! [`WebhookSender`] on hyper and rustls, with the SSRF guard in the connector.
//!
//! The connector's resolver checks every address a host name resolves to and refuses the name if
//! any is blocked; the TCP connection then goes to the checked addresses only, so a second lookup
//! (DNS rebinding) cannot redirect it. Address literals are checked before the request. TLS is
//! always verified, against the system roots plus the PEM roots of `extra_roots`. Connections are
//! kept alive and reused per host. Redirects are never followed.

use std::borrow::Cow;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::Result;
use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::header::{HeaderName, HeaderValue};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptReport, FailureReason, ResponseExcerpt, WebhookRequest,
};
use timetrack_domain::net::{blocked_reason, check_webhook_url, loopback_literal_port};
use timetrack_domain::ports::{LocalReceivers, WebhookSender};

use crate::listen::ListenDir;

/// Most bytes of a response body read; the rest is never received.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024;

/// How the sender connects.
#[derive(Debug, Clone)]
pub struct SenderSettings {
    /// Longest TCP connect.
    pub connect_timeout: Duration,
    /// Longest attempt, from resolving to the last body byte read.
    pub total_timeout: Duration,
    /// Lift the SSRF guard (tests and development only).
    pub allow_private_targets: bool,
    /// A PEM file of extra trusted roots (tests, private CAs).
    pub extra_roots: Option<PathBuf>,
    /// The local receivers of `timetrack listen` on this data directory: the loopback ports
    /// they register may be reached, and their CA is trusted.
    pub local_receivers: Option<ListenDir>,
    /// Idle connections kept per host.
    pub max_idle_per_host: usize,
}

impl Default for SenderSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(15),
            allow_private_targets: false,
            extra_roots: None,
            local_receivers: None,
            max_idle_per_host: 32,
        }
    }
}

/// A resolution refused because an address is blocked.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to a blocked address ({reason})")]
struct BlockedTarget {
    host: String,
    reason: &'static str,
}

/// A name that did not resolve.
#[derive(Debug, thiserror::Error)]
#[error("{host} did not resolve: {detail}")]
struct DnsFailure {
    host: String,
    detail: String,
}

/// The connector's resolver: the system resolver, then the SSRF check of every address.
#[derive(Debug, Clone)]
struct GuardedResolver {
    allow_private: bool,
}

type ResolveFuture =
    Pin<Box<dyn Future<Output = Result<std::vec::IntoIter<SocketAddr>, BoxError>> + Send>>;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = ResolveFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| DnsFailure {
                    host: host.clone(),
                    detail: e.to_string(),
                })?
                .collect();
            if addresses.is_empty() {
                return Err(DnsFailure {
                    host,
                    detail: "no addresses".into(),
                }
                .into());
            }
            if !allow_private
                && let Some(reason) = addresses.iter().find_map(|a| blocked_reason(a.ip()))
            {
                return Err(BlockedTarget { host, reason }.into());
            }
            Ok(addresses.into_iter())
        })
    }
}

/// The HTTPS sender; cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct HyperWebhookSender {
    client: Client<HttpsConnector<HttpConnector<GuardedResolver>>, Full<Bytes>>,
    settings: Arc<SenderSettings>,
}

impl std::fmt::Debug for HyperWebhookSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperWebhookSender")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl HyperWebhookSender {
    /// Builds the sender; fails if the extra roots cannot be read or no root is usable.
    pub fn new(settings: SenderSettings) -> Result<Self> {
        let local_ca = match &settings.local_receivers {
            Some(local) => Some(local.ensure_ca()?),
            None => None,
        };
        let roots: Vec<&std::path::Path> = settings
            .extra_roots
            .iter()
            .chain(local_ca.iter())
            .map(PathBuf::as_path)
            .collect();
        let tls = super::client_tls(&roots)?;

        let mut http = HttpConnector::new_with_resolver(GuardedResolver {
            allow_private: settings.allow_private_targets,
        });
        http.enforce_http(false);
        http.set_connect_timeout(Some(settings.connect_timeout));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(settings.max_idle_per_host)
            .pool_idle_timeout(Duration::from_secs(90))
            .build(https);
        Ok(Self {
            client,
            settings: Arc::new(settings),
        })
    }

    async fn attempt(&self, request: &WebhookRequest) -> (AttemptOutcome, Option<ResponseExcerpt>) {
        // Literals never reach the resolver: check them (and the URL rules) here. The request
        // goes to the URL as this check parsed it, so what was checked is what is sent.
        // `127.0.0.1` is allowed for a port where a `timetrack listen` of the delivery's
        // workspace runs now.
        let local = self.settings.local_receivers.as_ref().is_some_and(|local| {
            request.workspace.is_some_and(|workspace| {
                loopback_literal_port(&request.url)
                    .is_some_and(|port| local.receives_at(port, workspace))
            })
        });
        let Some(target) =
            check_webhook_url(&request.url, self.settings.allow_private_targets || local)
        else {
            return (
                failed(
                    FailureReason::BlockedTarget,
                    "the URL or its address is not allowed",
                ),
                None,
            );
        };
        let mut builder = Request::post(target.request_uri());
        for (name, value) in &request.headers {
            // The delivery's own names are constants; a webhook's custom ones were checked when
            // it was saved, and are checked again here rather than trusted.
            let name = match name {
                Cow::Borrowed(own) => Ok(HeaderName::from_static(own)),
                Cow::Owned(custom) => HeaderName::from_bytes(custom.as_bytes()),
            };
            match (name, HeaderValue::from_str(value)) {
                (Ok(name), Ok(value)) => {
                    builder = builder.header(name, value);
                }
                _ => {
                    return (failed(FailureReason::Protocol, "invalid header"), None);
                }
            }
        }
        let http_request = match builder.body(Full::new(Bytes::from(request.body.clone()))) {
            Ok(r) => r,
            Err(e) => return (failed(FailureReason::Protocol, &e.to_string()), None),
        };
        let response = match self.client.request(http_request).await {
            Ok(response) => response,
            Err(err) => return (classify(&err), None),
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|secs| time::Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX)));
        let body = read_capped(response.into_body()).await;
        let excerpt = ResponseExcerpt::of(&body);
        let outcome = if status.is_success() {
            AttemptOutcome::Delivered {
                status: status.as_u16(),
            }
        } else {
            AttemptOutcome::Rejected {
                status: status.as_u16(),
                retry_after,
            }
        };
        (outcome, excerpt)
    }
}

fn failed(reason: FailureReason, detail: &str) -> AttemptOutcome {
    AttemptOutcome::Failed {
        reason,
        detail: detail.to_owned(),
    }
}

/// Reads at most [`MAX_RESPONSE_BYTES`] of a body; a broken body ends the read, not the attempt.
async fn read_capped(mut body: hyper::body::Incoming) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < MAX_RESPONSE_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let room = MAX_RESPONSE_BYTES - out.len();
                    out.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Some(Err(_)) | None => break,
        }
    }
    out
}

/// Names the cause of a request that got no response, from its error chain.
fn classify(err: &hyper_util::client::legacy::Error) -> AttemptOutcome {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut detail = err.to_string();
    while let Some(e) = source {
        if let Some(blocked) = e.downcast_ref::<BlockedTarget>() {
            return failed(FailureReason::BlockedTarget, &blocked.to_string());
        }
        if let Some(dns) = e.downcast_ref::<DnsFailure>() {
            return failed(FailureReason::Dns, &dns.to_string());
        }
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            let hint = match tls {
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer) => {
                    " (the certificate is not signed by a trusted root; a private CA is trusted \
                     with --webhook-root-certs)"
                }
                _ => "",
            };
            return failed(FailureReason::Tls, &format!("{tls}{hint}"));
        }
        detail = e.to_string();
        // `io::Error::source` skips the error it wraps; descend into it instead.
        source = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    if err.is_connect() {
        failed(FailureReason::Connect, &detail)
    } else {
        failed(FailureReason::Protocol, &detail)
    }
}

#[async_trait]
impl WebhookSender for HyperWebhookSender {
    async fn send(&self, request: &WebhookRequest) -> AttemptReport {
        let started = Instant::now();
        let (outcome, response_excerpt) =
            match tokio::time::timeout(self.settings.total_timeout, self.attempt(request)).await {
                Ok(result) => result,
                Err(_) => (
                    failed(
                        FailureReason::Timeout,
                        &format!("no response within {:?}", self.settings.total_timeout),
                    ),
                    None,
                ),
            };
        AttemptReport {
            outcome,
            latency: time::Duration::try_from(started.elapsed()).unwrap_or(time::Duration::MAX),
            response_excerpt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_service::Service;

    #[tokio::test]
    async fn the_resolver_refuses_names_of_blocked_addresses_unless_allowed() {
        let name: Name = "localhost".parse().unwrap();
        let err = GuardedResolver {
            allow_private: false,
        }
        .call(name.clone())
        .await
        .unwrap_err();
        assert!(err.downcast_ref::<BlockedTarget>().is_some(), "{err}");
        let addresses: Vec<SocketAddr> = GuardedResolver {
            allow_private: true,
        }
        .call(name)
        .await
        .unwrap()
        .collect();
        assert!(addresses.iter().all(|a| a.ip().is_loopback()));
        let err = GuardedResolver {
            allow_private: false,
        }
        .call("no-such-host.invalid".parse().unwrap())
        .await
        .unwrap_err();
        assert!(err.downcast_ref::<DnsFailure>().is_some(), "{err}");
    }
}
