//! Structured logs on stderr (stdout is kept for command output), as text or JSON lines.

use anyhow::{Context, Result};
use tracing::Subscriber;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::config::{GlobalSettings, LogFormat};

/// Installs the global subscriber; call once, first thing in `main`.
pub fn init(settings: &GlobalSettings) -> Result<()> {
    let filter = EnvFilter::try_new(with_quiet_defaults(&settings.log)).with_context(|| {
        format!(
            "invalid log filter {:?} (--log / TIMETRACK_LOG)",
            settings.log
        )
    })?;
    subscriber(filter, settings.log_format, std::io::stderr)
        .try_init()
        .map_err(|e| anyhow::anyhow!(e))
        .context("installing the logger")?;
    std::panic::set_hook(Box::new(log_panic));
    Ok(())
}

/// `filter` with actix's own start and stop lines (workers starting, "starting service" per
/// listener, accept threads stopping) at WARN: timetrack logs its listeners once itself. A filter
/// that names `actix_server` keeps its own say.
fn with_quiet_defaults(filter: &str) -> String {
    if filter.contains("actix_server") {
        filter.to_owned()
    } else if filter.trim().is_empty() {
        "info,actix_server=warn".to_owned()
    } else {
        format!("{filter},actix_server=warn")
    }
}

/// The panic hook: one ERROR line with the message and where it happened (inside the request's
/// span, so with its request id), and never a backtrace, whatever `RUST_BACKTRACE` says: a panic a
/// client can trigger must not let it write hundreds of kilobytes of log per request.
fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let location = info
        .location()
        .map(|l| format!("{}:{}", l.file(), l.line()))
        .unwrap_or_default();
    tracing::error!(panic = message, location, "panicked");
}

/// The logger `init` installs, writing to `writer`: events as `filter` admits them, each inside
/// its request's span (`request{id=...}`) when logged while one is answered; the access line of
/// each request is such an event (target `access`, see `app::access_log`). Whatever the filter,
/// every connection the HTTP stack ends on a client's malformed bytes (target
/// `actix_http::client_fault`, at DEBUG) is counted in `timetrack_http_client_faults_total`.
pub fn subscriber<W>(
    filter: EnvFilter,
    format: LogFormat,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // Colours only for a person at a terminal: in a file or a collector, escape sequences are
    // noise in every field.
    let text = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(writer);
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => Box::new(text.with_filter(filter)),
        LogFormat::Json => Box::new(text.json().with_current_span(true).with_filter(filter)),
    };
    let faults = ClientFaults
        .with_filter(Targets::new().with_target("actix_http::client_fault", tracing::Level::DEBUG));
    Box::new(tracing_subscriber::registry().with(lines).with(faults))
}

/// Counts the HTTP stack's reports of a client's malformed bytes.
struct ClientFaults;

impl<S: Subscriber> Layer<S> for ClientFaults {
    fn on_event(&self, _: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        timetrack_adapters::metrics::count_client_fault();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actix_start_lines_are_quiet_unless_asked_for() {
        assert_eq!(with_quiet_defaults("info"), "info,actix_server=warn");
        assert_eq!(
            with_quiet_defaults("debug,timetrack_api=trace"),
            "debug,timetrack_api=trace,actix_server=warn"
        );
        assert_eq!(
            with_quiet_defaults("actix_server=info"),
            "actix_server=info"
        );
        assert!(EnvFilter::try_new(with_quiet_defaults("info")).is_ok());
    }
}
