//! The `timetrack` binary: parses the command line, installs logging, runs the command.

use std::io::Write;
use std::process::ExitCode;

use timetrack_api::config::{Cli, LogFormat};
use timetrack_api::{commands, telemetry};

/// mimalloc rather than the system allocator: a search request allocates and frees many small
/// objects (rows, strings, JSON), which cost glibc's malloc a noticeable share of the server's
/// CPU and mimalloc less (figures in docs/benchmarks.md, "The HTTP hop").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    if let Err(err) = telemetry::init(&cli.global) {
        let _ = writeln!(std::io::stderr(), "error: {err:#}");
        return ExitCode::FAILURE;
    }
    let log_format = cli.global.log_format;
    match actix_web::rt::System::new().block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Once: as a log record for a collector reading JSON lines, else as a plain line.
            match log_format {
                LogFormat::Json => tracing::error!(error = format!("{err:#}"), "failed"),
                LogFormat::Text => {
                    let _ = writeln!(std::io::stderr(), "error: {err:#}");
                }
            }
            ExitCode::FAILURE
        }
    }
}
