//! The commands of the `timetrack` binary.

mod admin;
mod database;
mod demo;
mod listen;
mod mcp;
mod serve;

use std::io::Write;

use anyhow::Result;

use crate::config::{Cli, Command};

pub use database::Database;

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Some(Command::Serve(settings)) => serve::serve(&cli.global, &settings).await,
        Some(Command::Migrate) => {
            let db = Database::open(&cli.global).await?;
            let applied = serde_json::json!({ "applied": db.applied_migrations() });
            db.close().await;
            print_json(&applied)
        }
        Some(Command::Admin(command)) => admin::run(&cli.global, command).await,
        Some(Command::Mcp(settings)) => mcp::run(&settings).await,
        Some(Command::Listen(settings)) => listen::run(&cli.global, &settings).await,
        None => unreachable!("Cli::parse_args always yields a command"),
    }
}

/// Writes one JSON document and a newline on stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}
