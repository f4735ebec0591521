//! The HTTPS endpoint of `timetrack listen` on this machine, and the plain client that forwards
//! what it receives to the user's own handler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

use crate::listen::LocalCertificate;

/// The most bytes of a request body read (a delivery is far smaller).
const MAX_BODY: usize = 8 * 1024 * 1024;

/// How long a forward may take.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// One request as it arrived: its path, its headers (names lower-case) and its body.
#[derive(Debug, Clone)]
pub struct Arrived {
    /// The path and query.
    pub path: String,
    /// Every header, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

impl Arrived {
    /// The first value of the header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the handler answers: a status and a short text body.
pub type Answer = (u16, String);

/// A handler of arrived requests.
pub type Handler =
    Arc<dyn Fn(Arrived) -> Pin<Box<dyn Future<Output = Answer> + Send>> + Send + Sync>;

/// Serves HTTPS on `listener` with `certificate`, giving each request to `handle`, until the
/// task is dropped. A connection that fails its handshake is closed and forgotten.
pub async fn serve_https(
    listener: TcpListener,
    certificate: &LocalCertificate,
    handle: Handler,
) -> Result<()> {
    let chain = CertificateDer::pem_slice_iter(certificate.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .context("reading the receiver certificate")?;
    let key = PrivateKeyDer::from_pem_slice(certificate.key_pem.as_bytes())
        .context("reading the receiver key")?;
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("TLS versions")?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .context("the receiver's TLS set-up")?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let acceptor = acceptor.clone();
        let handle = handle.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = hyper::service::service_fn(move |request| {
                let handle = handle.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(request, handle).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn answer(request: Request<hyper::body::Incoming>, handle: Handler) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_owned(), ToString::to_string);
    let headers = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let (status, text) = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => {
            handle(Arrived {
                path,
                headers,
                body: body.to_bytes(),
            })
            .await
        }
        Err(_) => (413, "body too large or broken".to_owned()),
    };
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    response
}

/// Forwards arrived requests to one URL (http or https, the system's roots trusted).
#[derive(Clone)]
pub struct Forwarder {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    url: hyper::Uri,
}

impl std::fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forwarder")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Headers that belong to one connection and are not forwarded.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "content-length",
    "host",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
];

impl Forwarder {
    /// A forwarder to `url`; only http and https URLs with a host are accepted.
    pub fn new(url: &str) -> Result<Self> {
        let uri: hyper::Uri = url
            .trim()
            .parse()
            .with_context(|| format!("--forward-to {url:?} is not a URL"))?;
        anyhow::ensure!(
            matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some(),
            "--forward-to must be an http:// or https:// address, such as http://localhost:3000/webhooks (got {url:?})"
        );
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(super::client_tls(&[])?)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build(https),
            url: uri,
        })
    }

    /// Where requests go.
    pub fn url(&self) -> String {
        self.url.to_string()
    }

    /// POSTs `arrived`'s body with its headers (those of the connection aside); answers the
    /// status and the first KiB of the body, or why the URL could not be reached.
    pub async fn forward(&self, arrived: &Arrived) -> Result<Answer> {
        let mut request = Request::post(self.url.clone());
        for (name, value) in &arrived.headers {
            if !HOP_BY_HOP.contains(&name.as_str()) {
                request = request.header(name.as_str(), value.as_str());
            }
        }
        let request = request
            .body(Full::new(arrived.body.clone()))
            .context("building the forwarded request")?;
        let response = tokio::time::timeout(FORWARD_TIMEOUT, self.client.request(request))
            .await
            .with_context(|| format!("{} did not answer within 30 s", self.url))?
            .with_context(|| format!("{} cannot be reached", self.url))?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), 64 * 1024)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&body[..body.len().min(1024)]).into_owned();
        Ok((status, text))
    }
}
