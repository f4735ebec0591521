//! The replica workload: what `--database-replica-url` takes off the primary. A streaming standby
//! of the bench's private cluster (`pg_basebackup -R`) beside it; the search workload's common
//! query (`lo`, 8 at once) and the reports workload's month summary (by project and day, 2 at
//! once) driven first against a server without the replica and then against one with it, for
//! the same time each. Reported per request: requests a second, and the CPU time of the primary's
//! PostgreSQL processes, of the replica's and of the server.
//!
//! Both servers, both clusters and the tool share the machine's cores, so the figure that shows
//! the design is the primary's CPU per request, which the replica should take to near nothing
//! (what stays on the primary is the watch's sample, one small query every 100 ms).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use timetrack_adapters::{Durability, LocalPostgres};

use crate::cpu::{CpuPerRequest, tree_ticks_us};
use crate::setup::Environment;
use crate::stats::Repeated;
use crate::{Options, Sizes, progress};

/// One load on one server.
#[derive(Debug, Clone, Default)]
pub struct Side {
    pub rps: Repeated,
    /// The primary's PostgreSQL processes, µs per request.
    pub primary_us: Repeated,
    /// The replica's, µs per request.
    pub replica_us: Repeated,
    /// The `timetrack` server's, µs per request.
    pub server_us: Repeated,
    pub errors: usize,
}

/// One load, without and with the replica.
#[derive(Debug, Clone, Default)]
pub struct Load {
    pub name: &'static str,
    pub concurrency: usize,
    pub without: Side,
    pub with: Side,
}

/// What the workload measured.
#[derive(Debug, Clone, Default)]
pub struct ReplicaReads {
    pub loads: Vec<Load>,
    /// Why it did not run (the database is not the bench's private cluster).
    pub skipped: Option<String>,
}

/// Runs the workload.
pub async fn measure(env: &Environment, options: &Options, sizes: Sizes) -> Result<ReplicaReads> {
    let Some(primary) = env.local() else {
        return Ok(ReplicaReads {
            skipped: Some(
                "DATABASE_URL is set: the workload makes its standby from the private cluster"
                    .to_owned(),
            ),
            ..ReplicaReads::default()
        });
    };
    let search_ws = crate::search::seed(env, sizes).await?;
    let search_key = env.account_in(&search_ws.to_string()).await?.key;
    let reports_ws = crate::reports::workspace_id(sizes.report_entries);
    crate::reports::seed(env, reports_ws, sizes.report_entries).await?;
    let reports_key = crate::reports::owner_key(env, reports_ws).await?;

    // A fresh standby of the cluster as it is now, datasets included.
    let root = std::path::absolute(&options.data_dir)?.join("replica");
    if root.exists() {
        std::fs::remove_dir_all(&root).with_context(|| format!("removing {}", root.display()))?;
    }
    progress("replica: pg_basebackup of the bench cluster");
    let standby = tokio::task::block_in_place(|| {
        LocalPostgres::start_standby(primary, &root, Durability::Durable)
    })?;
    let standby_pid = postmaster_pid(&root.join("pgdata"))?;
    caught_up(env, &standby).await?;
    let replica_url = standby.url(crate::setup::DATABASE);

    let without = env.start_server(options).await?;
    let with = env
        .start_server_with(options, &[("TIMETRACK_DATABASE_REPLICA_URL", &replica_url)])
        .await?;
    // Let the second server's watch sample both.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let mut loads = vec![
        Load {
            name: "client search (`lo`)",
            concurrency: 8,
            ..Load::default()
        },
        Load {
            name: "month summary by project and day",
            concurrency: 2,
            ..Load::default()
        },
    ];
    for _ in 0..sizes.runs {
        for (index, load) in loads.iter_mut().enumerate() {
            for (server, side) in [(&without, &mut load.without), (&with, &mut load.with)] {
                let request = match index {
                    0 => crate::loads::search_lo(server, &search_key, search_ws)?,
                    _ => crate::loads::month_summary(server, &reports_key),
                };
                let before = tree_ticks_us(standby_pid);
                let (rps, answered, errors, cpu) =
                    crate::search::drive(load.concurrency, sizes, server, move || request()).await;
                let replica_us = tree_ticks_us(standby_pid).saturating_sub(before);
                let cpu: CpuPerRequest = cpu.unwrap_or_default();
                side.rps.push(rps);
                side.primary_us.push(cpu.database);
                side.server_us.push(cpu.server);
                side.replica_us
                    .push(replica_us as f64 / answered.0.len().max(1) as f64);
                side.errors += errors;
            }
        }
    }
    for load in &loads {
        progress(&format!(
            "replica: {}: primary {:.0} → {:.0} µs/request, replica {:.0} µs/request",
            load.name,
            load.without.primary_us.median(),
            load.with.primary_us.median(),
            load.with.replica_us.median()
        ));
        if load.without.errors + load.with.errors > 0 {
            bail!(
                "replica: {} failed {} requests",
                load.name,
                load.without.errors + load.with.errors
            );
        }
    }
    drop(with);
    drop(without);
    drop(standby);
    let _ = std::fs::remove_dir_all(&root);
    loads.retain(|load| !load.without.rps.0.is_empty());
    Ok(ReplicaReads {
        loads,
        skipped: None,
    })
}

/// The postmaster's pid, from the first line of `postmaster.pid`.
fn postmaster_pid(data: &Path) -> Result<u32> {
    let text = std::fs::read_to_string(data.join("postmaster.pid"))
        .with_context(|| format!("reading {}/postmaster.pid", data.display()))?;
    text.lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
        .context("postmaster.pid names no pid")
}

/// Waits until the standby has replayed what the primary has written.
async fn caught_up(env: &Environment, standby: &LocalPostgres) -> Result<()> {
    let (primary, driver) = crate::setup::connect(&env.database_url).await?;
    let lsn: String = primary
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .await?
        .get(0);
    drop(primary);
    driver.abort();
    let (replica, driver) = crate::setup::connect(&standby.url("postgres")).await?;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let done: bool = replica
            .query_one(
                "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
                &[&lsn],
            )
            .await?
            .get(0);
        if done {
            break;
        }
        if Instant::now() > deadline {
            bail!("the standby did not replay {lsn} within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(replica);
    driver.abort();
    Ok(())
}
