//! Scenario 5a, fuzzing from the OpenAPI description: Schemathesis, installed from PyPI into a
//! virtual environment of its own, runs all its checks against the served
//! `GET /api/openapi.json`; its NDJSON events are then read (`findings`) and judged (`judge`).

mod findings;
mod install;
mod judge;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use timetrack_testkit::ServerProcess;
use tokio::process::Command;

use self::findings::Findings;
use self::install::{SCHEMATHESIS_VERSION, install_schemathesis, run_logged};
use crate::env::Env;
use crate::scenario::{Scenario, say};

/// Test cases per operation and phase, full run and `--quick`.
const EXAMPLES: (u32, u32) = (50, 10);
/// How long the Schemathesis run may take before it is killed.
const FUZZ_LIMIT: Duration = Duration::from_secs(8 * 60);
/// The health check must answer within this after the run.
const HEALTH_LIMIT: Duration = Duration::from_secs(3);

/// Schemathesis, with all its checks, against the served `GET /api/openapi.json`.
pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    let at = Instant::now();
    let bin = install_schemathesis(env).await?;
    s.figure("schemathesis version", SCHEMATHESIS_VERSION);
    s.figure(
        "install or reuse",
        format!("{:.1} s", at.elapsed().as_secs_f64()),
    );

    let url = env.database("fuzz").await?;
    let account = env.account(&url, "Fuzz").await?;
    let mut server = env
        .plain_serve(&url, "fuzz")?
        .unlimited()
        // The fuzzer sends hundreds of requests without a key on purpose; past the per-address
        // limit on failed authentication they would all be 429s and the 401 path go untested.
        .env("TIMETRACK_AUTH_FAILURES_PER_MINUTE", "1000000000")
        .start()
        .await?;
    seed_data(&server, &account.key).await?;

    let dir = env.dir.join("schemathesis");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let examples = if env.quick { EXAMPLES.1 } else { EXAMPLES.0 };
    let json_path = dir.join("report.json");
    let ndjson_path = dir.join("events.ndjson");
    let junit_path = dir.join("junit.xml");
    let base = server.base.clone();
    let seed = uuid::Uuid::new_v4().as_u64_pair().0 >> 1;
    s.figure("seed (replay with --seed)", seed);
    let args: Vec<String> = vec![
        "run".into(),
        format!("{base}/api/openapi.json"),
        "--url".into(),
        base.clone(),
        "--checks".into(),
        "all".into(),
        "--max-examples".into(),
        examples.to_string(),
        // Every case runs even once an operation has failed, so an early schema complaint
        // cannot end the search for server errors on that operation.
        "--continue-on-failure".into(),
        "--workers".into(),
        "1".into(),
        "--request-timeout".into(),
        "10".into(),
        "--header".into(),
        format!("Authorization: Bearer {}", account.key),
        "--report".into(),
        "junit,json,ndjson".into(),
        "--report-junit-path".into(),
        junit_path.display().to_string(),
        "--report-json-path".into(),
        json_path.display().to_string(),
        "--report-ndjson-path".into(),
        ndjson_path.display().to_string(),
        // Chosen here rather than by Schemathesis: its own seeds exceed what a JSON number keeps.
        "--seed".into(),
        seed.to_string(),
        "--no-color".into(),
    ];
    let shown = args
        .iter()
        .map(|a| {
            let a = a.replace(&account.key, "<key>");
            if a.contains(' ') { format!("'{a}'") } else { a }
        })
        .collect::<Vec<_>>()
        .join(" ");
    s.figure("command", format!("schemathesis {shown}"));
    say(&format!(
        "  running schemathesis ({examples} examples per operation), output in {}",
        dir.display()
    ));

    let run_at = Instant::now();
    let mut command = Command::new(&bin);
    // Its own directory, so its example database and any stray config stay out of the repository.
    command.args(&args).current_dir(&dir).env("NO_COLOR", "1");
    let exit = run_logged(&mut command, &dir.join("output.log"), FUZZ_LIMIT).await?;
    let run_time = run_at.elapsed();
    s.figure("fuzzing time", format!("{:.1} s", run_time.as_secs_f64()));
    match exit {
        Some(exit) => {
            let report: Value =
                serde_json::from_str(&std::fs::read_to_string(&json_path).with_context(|| {
                    format!("no JSON report (exit {exit}), see {}", dir.display())
                })?)?;
            let events =
                std::fs::read_to_string(&ndjson_path).context("reading the NDJSON events")?;
            judge::judge(s, &report, &Findings::read(&events)?, exit);
        }
        None => {
            s.check(
                format!(
                    "schemathesis finished within {} min",
                    FUZZ_LIMIT.as_secs() / 60
                ),
                false,
                format!("killed after {:.0} s", run_time.as_secs_f64()),
            );
        }
    }

    let probe = reqwest::Client::builder().timeout(HEALTH_LIMIT).build()?;
    let health = probe.get(format!("{base}/api/health")).send().await;
    let exited = server.exited();
    s.check(
        "server healthy after fuzzing",
        exited.is_none() && health.as_ref().is_ok_and(|r| r.status() == 200),
        match (exited, health) {
            (Some(status), _) => format!("the server exited ({status})"),
            (None, Ok(r)) => r.status().to_string(),
            (None, Err(err)) => err.to_string(),
        },
    );
    Ok(())
}

/// A little of everything, so that reads have rows and ids to find: a client, a project with a
/// task, a tag, a manual entry and a stopped timer.
async fn seed_data(server: &ServerProcess, key: &str) -> Result<()> {
    let create = |path: &'static str, body: Value| async move {
        let (status, created) = server.post(key, path, &body).await?;
        if !(200..300).contains(&status) {
            bail!("seeding {path}: {status} {created}");
        }
        Ok::<_, anyhow::Error>(created["id"].as_str().unwrap_or_default().to_owned())
    };
    let client = create(
        "/api/clients",
        json!({"name": "Fuzz Client", "email": "billing@fuzz.example", "type": "company"}),
    )
    .await?;
    let project = create(
        "/api/projects",
        json!({"name": "Fuzz Project", "client_id": client}),
    )
    .await?;
    let (status, task) = server
        .post(
            key,
            &format!("/api/projects/{project}/tasks"),
            &json!({"name": "Fuzz Task"}),
        )
        .await?;
    if status != 201 {
        bail!("seeding a task: {status} {task}");
    }
    let tag = create("/api/tags", json!({"name": "fuzz"})).await?;
    create(
        "/api/time-entries",
        json!({
            "start": "2024-01-02T09:00:00Z",
            "end": "2024-01-02T10:30:00Z",
            "description": "Seeded entry",
            "project_id": project,
            "task_id": task["id"],
            "tag_ids": [tag],
            "billable": true,
        }),
    )
    .await?;
    create(
        "/api/time-entries/start",
        json!({"description": "Seeded timer"}),
    )
    .await?;
    create("/api/time-entries/stop", json!({})).await?;
    Ok(())
}
