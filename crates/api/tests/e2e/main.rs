//! Black-box tests of the real `timetrack` binary over HTTP, one file per subject: the
//! one-shot commands (`cli`), `serve` as a process (`process`), webhook deliveries to a real
//! HTTPS receiver (`deliveries/`), and `timetrack listen` (`listen`).
//!
//! What these tests print goes through `eprintln!`, which the test harness captures and shows
//! for a failing test only, so a passing run stays quiet.
#![allow(clippy::print_stderr)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use timetrack_testkit::{ServeCommand, ServerProcess, TestDatabase};

mod cli;
mod deliveries;
mod failover;
mod generated_client;
mod listen;
mod process;
mod replicas;
mod zapier;

const BIN: &str = env!("CARGO_BIN_EXE_timetrack");

/// Runs a one-shot command of the binary.
fn run(args: &[&str], database_url: &str) -> Output {
    Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("TIMETRACK_LOG", "warn")
        .output()
        .expect("running timetrack")
}

fn json_stdout(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&out.stdout)))
}

/// Creates a workspace (with `workspace_args`), a user Ada and an API key through the CLI, and
/// returns the key.
fn seed_account(url: &str, workspace_args: &[&str]) -> String {
    seed_account_for(url, workspace_args, "Ada", "ada@example.com")
}

/// [`seed_account`] for a user of `name` and `email`.
fn seed_account_for(url: &str, workspace_args: &[&str], name: &str, email: &str) -> String {
    let mut args = vec!["admin", "create-workspace"];
    args.extend_from_slice(workspace_args);
    let ws = json_stdout(&run(&args, url));
    let ws_id = ws["id"].as_str().unwrap().to_owned();
    let user = json_stdout(&run(
        &[
            "admin",
            "create-user",
            "--workspace",
            &ws_id,
            "--name",
            name,
            "--email",
            email,
        ],
        url,
    ));
    let key = json_stdout(&run(
        &[
            "admin",
            "create-api-key",
            "--user",
            user["id"].as_str().unwrap(),
            "--workspace",
            &ws_id,
        ],
        url,
    ));
    key["key"].as_str().unwrap().to_owned()
}

/// `timetrack serve` on `database_url` as these tests start it: metrics on a port of their own,
/// stdout captured, the log shown if the test fails.
fn serve(database_url: &str) -> ServeCommand {
    tuned(ServeCommand::new(Path::new(BIN), database_url))
}

/// The settings every server of these tests has.
fn tuned(command: ServeCommand) -> ServeCommand {
    command
        .with_metrics()
        .capture_stdout()
        .log_shown_on_failure(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-logs"))
}

mod reqwest {
    //! A tiny blocking HTTP/1.1 client, enough to talk to the server under test.
    pub use ::reqwest::*;

    /// `GET url` with an optional bearer key: status and body.
    pub fn get_with(url: &str, key: Option<&str>) -> std::io::Result<(u16, String)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let mut req = Client::new()
                .get(url)
                .timeout(std::time::Duration::from_secs(5));
            if let Some(key) = key {
                req = req.bearer_auth(key);
            }
            let res = req.send().await.map_err(std::io::Error::other)?;
            let status = res.status().as_u16();
            let body = res.text().await.map_err(std::io::Error::other)?;
            Ok((status, body))
        })
    }
}

fn get_json(server: &ServerProcess, path: &str, key: &str) -> (u16, Value) {
    let (status, body) = reqwest::get_with(&format!("{}{path}", server.base), Some(key)).unwrap();
    (status, serde_json::from_str(&body).unwrap())
}

fn read_banner(server: &mut ServerProcess) -> String {
    let stdout = server.take_stdout().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut banner = String::new();
    for _ in 0..4 {
        banner.push_str(&lines.next().expect("banner line").unwrap());
        banner.push('\n');
    }
    banner
}
