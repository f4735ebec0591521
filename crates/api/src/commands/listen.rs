//! `timetrack listen`: a running local timetrack's deliveries, received on this machine, as
//! `stripe listen` does for Stripe. It subscribes a webhook for the events asked at a local HTTPS
//! endpoint that the `serve` on the same data directory trusts (its local CA, its registered
//! port: `timetrack_adapters::listen`), verifies each delivery's signature, prints it, optionally
//! forwards it with its headers to the user's own handler, and deletes the webhook when stopped.

use std::sync::Arc;

use anyhow::{Context, Result};
use http::Method;
use serde_json::{Value, json};
use timetrack_adapters::ListenDir;
use timetrack_adapters::http::{
    Answer, ApiClient, Arrived, Forwarder, Handler, RelayError, serve_https,
};
use timetrack_domain::ids::WorkspaceId;
use tokio::net::TcpListener;

use crate::config::{GlobalSettings, ListenSettings};

const HOOKS: &str = "/api/integrations/automation/webhooks";
const JSON: &str = "application/json";

/// How far a delivery's timestamp may be from now (the Standard Webhooks tolerance).
const TOLERANCE_SECONDS: i64 = 300;

/// Longest body shown on a line.
const SHOWN_BODY: usize = 240;

/// Writes one line on stdout, where the user (or a script) reads what arrives; a closed stdout
/// is ignored.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, $($arg)*);
        let _ = out.flush();
    }};
}

/// Runs until Ctrl-C (or SIGTERM), then deletes the webhook it subscribed.
pub async fn run(global: &GlobalSettings, settings: &ListenSettings) -> Result<()> {
    let data_dir = &global.data_dir;
    let base = match &settings.base_url {
        Some(base) => base.clone(),
        None => super::serve::running_serve(data_dir)
            .map(|(_, url)| url)
            .with_context(|| {
                format!(
                    "no timetrack serve runs on the data directory {} (start one with `timetrack \
                     serve` in another terminal, or name one with --base-url)",
                    data_dir.display()
                )
            })?,
    };
    let key = match std::env::var("TIMETRACK_API_KEY") {
        Ok(key) if !key.trim().is_empty() => key,
        _ => super::demo::read_key(data_dir).with_context(|| {
            format!(
                "TIMETRACK_API_KEY is not set and {} holds no demo key: set it to a key of your \
                 workspace",
                data_dir.display()
            )
        })?,
    };
    let api = ApiClient::new(&base, &key)?;
    let forwarder = settings
        .forward_to
        .as_deref()
        .map(Forwarder::new)
        .transpose()?;
    // Who the key is: its workspace is the one whose deliveries this receiver takes.
    let me = api
        .call(Method::GET, "/api/me", None, JSON)
        .await
        .map_err(|e| explain(e, &base))?
        .unwrap_or_default();
    let workspace = me["workspace"]["id"]
        .as_str()
        .and_then(|id| id.parse::<uuid::Uuid>().ok())
        .map(WorkspaceId)
        .with_context(|| format!("{base} answered /api/me without a workspace: {me}"))?;
    let events = events_to_receive(&api, &me, &settings.events).await?;

    let local = ListenDir::new(data_dir);
    let certificate = local.issue()?;
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("listening on 127.0.0.1")?;
    let port = listener.local_addr()?.port();
    let _registration = local.register(port, workspace)?;
    let url = format!("https://127.0.0.1:{port}/");
    let subscribed = api
        .call(
            Method::POST,
            &format!("{HOOKS}/subscribe"),
            Some(&json!({
                "url": url,
                "events": events,
                "description": format!("timetrack listen (pid {})", std::process::id()),
            })),
            JSON,
        )
        .await
        .map_err(|e| explain(e, &base))?
        .unwrap_or_default();
    let webhook = &subscribed["webhook"];
    let (Some(id), Some(secret)) = (webhook["id"].as_str(), webhook["secret"].as_str()) else {
        anyhow::bail!("{base} answered the subscription without a webhook: {subscribed}");
    };
    let receiver = Arc::new(Receiver {
        secret: secret.to_owned(),
        forwarder: forwarder.clone(),
    });
    let handler: Handler = Arc::new(move |arrived| {
        let receiver = receiver.clone();
        Box::pin(async move { receiver.receive(arrived).await })
    });
    let serving = tokio::spawn(async move { serve_https(listener, &certificate, handler).await });

    say!(
        "Ready: receiving {} from {base} at {url}",
        events.join(", ")
    );
    say!("Webhook {id}, signing secret {secret} (deleted when you stop: Ctrl-C)");
    if let Some(forwarder) = &forwarder {
        say!(
            "Forwarding each delivery to {}, with its headers",
            forwarder.url()
        );
    }

    let stopped = stop_signal().await;
    serving.abort();
    let deleted = api
        .call(Method::DELETE, &format!("{HOOKS}/{id}"), None, JSON)
        .await;
    stopped?;
    match deleted {
        Ok(_) => {
            say!("Stopped: webhook {id} deleted");
            Ok(())
        }
        Err(e) => Err(explain(e, &base)).with_context(|| {
            format!("deleting webhook {id}; delete it yourself (DELETE {HOOKS}/{id})")
        }),
    }
}

/// The events asked, upper-cased, or every subscribable type the key may receive (invoice
/// events are for owners and admins).
async fn events_to_receive(api: &ApiClient, me: &Value, asked: &[String]) -> Result<Vec<String>> {
    let asked: Vec<String> = asked
        .iter()
        .map(|e| e.trim().to_ascii_uppercase())
        .filter(|e| !e.is_empty())
        .collect();
    if !asked.is_empty() {
        return Ok(asked);
    }
    let member = me["user"]["role"] == "member";
    let catalog = api
        .call(
            Method::GET,
            "/api/integrations/automation/event-types",
            None,
            JSON,
        )
        .await
        .map_err(|e| explain(e, api.base()))?
        .unwrap_or_default();
    Ok(catalog
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["subscribable"] == true)
        .filter_map(|t| t["type"].as_str())
        .filter(|t| !(member && t.starts_with("INVOICE_")))
        .map(str::to_owned)
        .collect())
}

/// A failed call as a sentence: what the server said, or that it could not be reached.
fn explain(err: RelayError, base: &str) -> anyhow::Error {
    match err {
        RelayError::Refused {
            status: 401,
            message,
            ..
        } => anyhow::anyhow!(
            "{base} refused the key ({message}): set TIMETRACK_API_KEY to a key of your workspace"
        ),
        other => anyhow::anyhow!("{other}"),
    }
}

/// Waits for Ctrl-C or SIGTERM.
async fn stop_signal() -> Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("waiting for SIGTERM")?;
    tokio::select! {
        ctrl_c = tokio::signal::ctrl_c() => ctrl_c.context("waiting for Ctrl-C"),
        _ = term.recv() => Ok(()),
    }
}

/// What each delivery meets.
struct Receiver {
    secret: String,
    forwarder: Option<Forwarder>,
}

impl Receiver {
    /// Verifies, prints, and forwards one delivery; its answer is the handler's when forwarding
    /// (so the service retries what the handler refuses), else 200, or 401 for a bad signature.
    async fn receive(&self, arrived: Arrived) -> Answer {
        let now = time::OffsetDateTime::now_utc();
        let verified = self.verify(&arrived, now.unix_timestamp());
        let body: Option<Value> = serde_json::from_slice(&arrived.body).ok();
        let event = arrived
            .header("x-webhook-event")
            .map(str::to_owned)
            .or_else(|| {
                body.as_ref()
                    .and_then(|b| b["event"].as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "?".to_owned());
        let compact = body.map_or_else(
            || String::from_utf8_lossy(&arrived.body).into_owned(),
            |b| b.to_string(),
        );
        let shown: String = compact.chars().take(SHOWN_BODY).collect();
        let more = if shown.len() < compact.len() {
            " …"
        } else {
            ""
        };
        say!(
            "{:02}:{:02}:{:02}  {event}  {}  {}  {shown}{more}",
            now.hour(),
            now.minute(),
            now.second(),
            arrived.header("webhook-id").unwrap_or("-"),
            match &verified {
                Ok(()) => "verified".to_owned(),
                Err(why) => format!("NOT VERIFIED ({why})"),
            },
        );
        if verified.is_err() {
            return (401, "signature not verified".to_owned());
        }
        let Some(forwarder) = &self.forwarder else {
            return (200, "received".to_owned());
        };
        match forwarder.forward(&arrived).await {
            Ok((status, text)) => {
                say!("  -> {} {status}", forwarder.url());
                (status, text)
            }
            Err(err) => {
                say!("  -> {} failed: {err:#}", forwarder.url());
                (502, format!("forwarding failed: {err:#}"))
            }
        }
    }

    /// The Standard Webhooks check: one of the `v1,` signatures is the HMAC of
    /// `{id}.{timestamp}.{body}` with this webhook's secret, and the timestamp is within five
    /// minutes of `now`.
    fn verify(&self, arrived: &Arrived, now: i64) -> Result<(), &'static str> {
        let (Some(id), Some(timestamp), Some(signatures)) = (
            arrived.header("webhook-id"),
            arrived.header("webhook-timestamp"),
            arrived.header("webhook-signature"),
        ) else {
            return Err("signature headers missing");
        };
        let timestamp: i64 = timestamp.parse().map_err(|_| "bad timestamp")?;
        if (now - timestamp).abs() > TOLERANCE_SECONDS {
            return Err("timestamp too far from now");
        }
        let expected = timetrack_domain::delivery::sign(&self.secret, id, timestamp, &arrived.body)
            .map_err(|_| "bad secret")?;
        if signatures.split(' ').any(|s| s == expected) {
            Ok(())
        } else {
            Err("signature mismatch")
        }
    }
}
