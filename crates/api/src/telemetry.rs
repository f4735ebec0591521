//! Structured logs on stderr (stdout is kept for command output), as text or JSON lines.

use anyhow::{Context, Result};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

use crate::config::{GlobalSettings, LogFormat};

/// Installs the global subscriber; call once, first thing in `main`.
pub fn init(settings: &GlobalSettings) -> Result<()> {
    let filter = EnvFilter::try_new(&settings.log)
        .with_context(|| format!("invalid log filter {:?}", settings.log))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // One line per finished request, with its span fields (request id, route, status).
        .with_span_events(FmtSpan::CLOSE);
    let installed = match settings.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().with_current_span(true).try_init(),
    };
    installed
        .map_err(|e| anyhow::anyhow!(e))
        .context("installing the logger")
}
