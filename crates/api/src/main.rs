//! The `timetrack` binary: parses the command line, installs logging, runs the command.

use std::io::Write;
use std::process::ExitCode;

use timetrack_api::config::Cli;
use timetrack_api::{commands, telemetry};

fn main() -> ExitCode {
    let cli = match Cli::parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    if let Err(err) = telemetry::init(&cli.global) {
        let _ = writeln!(std::io::stderr(), "error: {err:#}");
        return ExitCode::FAILURE;
    }
    match actix_web::rt::System::new().block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = format!("{err:#}"), "failed");
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
