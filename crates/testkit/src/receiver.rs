//! A local HTTPS receiver with its own certificate authority, for delivery tests: it records what
//! it receives and answers each path as told (a status, headers, a delay, an endless body).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How the receiver answers a path.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// This status, with these headers, at once.
    Respond(u16, Vec<(String, String)>),
    /// This status after a delay (a long delay is a receiver that never answers).
    Slow(Duration, u16),
    /// 200 with a body that never ends.
    Endless,
    /// The statuses in turn, one per request; the last repeats.
    Sequence(Vec<u16>),
    /// No answer: the connection is dropped once the request is read.
    Reset,
    /// This status with these bytes as its body (binary, NUL, anything).
    Body(u16, Vec<u8>),
}

/// The error that makes hyper drop a connection without answering ([`Behaviour::Reset`]).
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Path and query.
    pub path: String,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// When it arrived.
    pub at: Instant,
    /// The status it was answered with (`None`: dropped without an answer).
    pub answered: Option<u16>,
}

impl Received {
    /// The value of header `name` (lowercase), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct State {
    received: Mutex<Vec<Received>>,
    behaviours: Mutex<HashMap<String, Behaviour>>,
    accepts: AtomicUsize,
    arrived: Notify,
}

/// A running receiver on 127.0.0.1; stops when dropped.
#[derive(Debug)]
pub struct HttpsReceiver {
    addr: SocketAddr,
    dir: PathBuf,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpsReceiver {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HttpsReceiver {
    /// Starts a receiver with a new CA and a certificate for `localhost` and `127.0.0.1`.
    pub async fn start() -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "timetrack test CA");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().expect("server key");
        let params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("server params");
        let cert = params.signed_by(&key, &issuer).expect("server certificate");

        let dir = std::env::temp_dir().join(format!("timetrack-receiver-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("receiver dir");
        std::fs::write(dir.join("ca.pem"), ca_cert.pem()).expect("writing the CA");

        let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("server TLS config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the receiver");
        let addr = listener.local_addr().expect("receiver address");
        let state = Arc::new(State::default());
        let serving = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                serving.accepts.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                let state = serving.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| handle(state.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            dir,
            state,
            task,
        }
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The PEM file of its CA, to trust through `TIMETRACK_WEBHOOK_ROOT_CERTS`.
    pub fn ca_pem_path(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// Answers `path` (without query) with `behaviour` from now on; unknown paths get 200.
    pub fn respond(&self, path: &str, behaviour: Behaviour) {
        lock(&self.state.behaviours).insert(path.to_owned(), behaviour);
    }

    /// Every request received so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state.received).clone()
    }

    /// How many requests arrived so far.
    pub fn count(&self) -> usize {
        lock(&self.state.received).len()
    }

    /// The requests received after the first `start`, in arrival order.
    pub fn received_from(&self, start: usize) -> Vec<Received> {
        let received = lock(&self.state.received);
        received
            .get(start..)
            .map(<[Received]>::to_vec)
            .unwrap_or_default()
    }

    /// TCP connections accepted so far.
    pub fn accepts(&self) -> usize {
        self.state.accepts.load(Ordering::SeqCst)
    }

    /// Waits until at least `count` requests arrived, or `timeout` passed; true if they did.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.state.arrived.notified();
            if lock(&self.state.received).len() >= count {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return lock(&self.state.received).len() >= count;
            }
        }
    }
}

/// A body that never ends.
struct EndlessBody;

impl Body for EndlessBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&[b'x'; 8192])))))
    }
}

fn full(text: &'static str) -> BoxBody<Bytes, Infallible> {
    http_body_util::Full::new(Bytes::from_static(text.as_bytes())).boxed()
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Dropped> {
    let path = req.uri().path().to_owned();
    let full_path = req
        .uri()
        .path_and_query()
        .map_or_else(|| path.clone(), |p| p.as_str().to_owned());
    let headers = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                // Values are bytes; UTF-8 ones (a custom header's) read as sent.
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let behaviour = {
        let mut behaviours = lock(&state.behaviours);
        match behaviours.get_mut(&path) {
            Some(Behaviour::Sequence(statuses)) if statuses.len() > 1 => {
                Some(Behaviour::Respond(statuses.remove(0), vec![]))
            }
            Some(Behaviour::Sequence(statuses)) => Some(Behaviour::Respond(statuses[0], vec![])),
            other => other.cloned(),
        }
    };
    let answered = match &behaviour {
        Some(
            Behaviour::Respond(status, _) | Behaviour::Slow(_, status) | Behaviour::Body(status, _),
        ) => Some(*status),
        Some(Behaviour::Reset) => None,
        Some(Behaviour::Endless | Behaviour::Sequence(_)) | None => Some(200),
    };
    lock(&state.received).push(Received {
        path: full_path,
        headers,
        body,
        at: Instant::now(),
        answered,
    });
    state.arrived.notify_waiters();
    let response = match behaviour.unwrap_or(Behaviour::Respond(200, vec![])) {
        Behaviour::Respond(status, headers) => {
            let mut builder = Response::builder().status(status);
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            builder.body(full("ok"))
        }
        Behaviour::Slow(delay, status) => {
            tokio::time::sleep(delay).await;
            Response::builder().status(status).body(full("late"))
        }
        Behaviour::Endless => Response::builder().status(200).body(EndlessBody.boxed()),
        Behaviour::Reset => return Err(Dropped),
        Behaviour::Body(status, bytes) => Response::builder()
            .status(status)
            .body(http_body_util::Full::new(Bytes::from(bytes)).boxed()),
        Behaviour::Sequence(_) => unreachable!("resolved above"),
    };
    Ok(response.unwrap_or_else(|_| Response::new(full("bad response"))))
}
