//! Structured logs on stderr (stdout is kept for command output), as text or JSON lines.

use anyhow::{Context, Result};
use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::config::{GlobalSettings, LogFormat};

/// Installs the global subscriber; call once, first thing in `main`.
pub fn init(settings: &GlobalSettings) -> Result<()> {
    let filter = EnvFilter::try_new(&settings.log)
        .with_context(|| format!("invalid log filter {:?}", settings.log))?;
    subscriber(filter, settings.log_format, std::io::stderr)
        .try_init()
        .map_err(|e| anyhow::anyhow!(e))
        .context("installing the logger")
}

/// The logger `init` installs, writing to `writer`: events as `filter` admits them, and one line
/// per finished request with its span fields (request id, route, status).
pub fn subscriber<W>(
    filter: EnvFilter,
    format: LogFormat,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_span_events(FmtSpan::CLOSE);
    match format {
        LogFormat::Text => Box::new(builder.finish()),
        LogFormat::Json => Box::new(builder.json().with_current_span(true).finish()),
    }
}
