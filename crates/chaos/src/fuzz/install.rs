//! Schemathesis in a virtual environment of the suite's own, at a pinned version, and child
//! processes run with their output in a log and a time limit.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::process::Command;

use crate::env::Env;
use crate::scenario::say;

/// The Schemathesis release the suite installs, and whose command line it drives.
pub const SCHEMATHESIS_VERSION: &str = "4.32.5";

/// The virtual environment's `schemathesis`, installed at `SCHEMATHESIS_VERSION` unless it
/// already is.
pub async fn install_schemathesis(env: &Env) -> Result<PathBuf> {
    let venv = env.dir.join("venv");
    let bin = venv.join("bin").join("schemathesis");
    if installed_version(&bin).await.as_deref() == Some(SCHEMATHESIS_VERSION) {
        return Ok(bin);
    }
    let log = env.dir.join("schemathesis-install.log");
    say(&format!(
        "  installing schemathesis {SCHEMATHESIS_VERSION} into {} (log {})",
        venv.display(),
        log.display()
    ));
    let python = venv.join("bin").join("python");
    if !python.exists() {
        let made = run_logged(
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
            &log,
            Duration::from_secs(300),
        )
        .await?;
        if !made.is_some_and(|s| s.success()) {
            bail!("python3 -m venv failed; see {}", log.display());
        }
    }
    let installed = run_logged(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            &format!("schemathesis=={SCHEMATHESIS_VERSION}"),
        ]),
        &log,
        Duration::from_secs(900),
    )
    .await?;
    let version = installed_version(&bin).await;
    if !installed.is_some_and(|s| s.success()) || version.as_deref() != Some(SCHEMATHESIS_VERSION) {
        bail!(
            "installing schemathesis {SCHEMATHESIS_VERSION} failed (found {version:?}); see {}",
            log.display()
        );
    }
    Ok(bin)
}

/// The version `schemathesis --version` reports (`schemathesis, version X`).
async fn installed_version(bin: &Path) -> Option<String> {
    if !bin.exists() {
        return None;
    }
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(bin)
            .arg("--version")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().rsplit(' ').next().map(str::to_owned)
}

/// Runs `command` with its output appended to `log`; its exit status, or `None` when it was
/// killed after `limit`.
pub async fn run_logged(
    command: &mut Command,
    log: &Path,
    limit: Duration,
) -> Result<Option<ExitStatus>> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .kill_on_drop(true);
    let mut child = command.spawn().context("starting a child process")?;
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => Ok(Some(status?)),
        Err(_) => {
            let _ = child.kill().await;
            Ok(None)
        }
    }
}
