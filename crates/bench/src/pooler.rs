//! The pooler workload: what `--database-pooler transaction` behind PgBouncer costs. PgBouncer
//! (Debian's; 1.18 on bookworm) in transaction mode in front of the bench's cluster with 8 server
//! connections; the same three loads driven first against a server connected directly, then
//! against one connected through PgBouncer, for the same time each: a client created (a write,
//! with its event; 8 at once), the client search `lo` (8 at once) and the month summary by
//! project and day (2 at once). Reported per request: requests a second, and the CPU time of
//! PostgreSQL's processes, of the server and of PgBouncer.
//!
//! Behind the pooler every statement is parsed and planned again (statements are unnamed, one
//! round trip each), where a direct connection keeps the fixed texts prepared; the figures show
//! what that costs against what the pooler saves in connections (docs/operations.md,
//! "PgBouncer").

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Result, bail};
use serde_json::json;
use timetrack_testkit::Pgbouncer;

use crate::cpu::{CpuPerRequest, tree_ticks_us};
use crate::loads::Requests;
use crate::setup::Environment;
use crate::stats::Repeated;
use crate::{Options, Sizes, progress};

/// Server connections PgBouncer keeps to PostgreSQL.
pub const POOL_SIZE: u32 = 8;

/// One load on one server.
#[derive(Debug, Clone, Default)]
pub struct Side {
    pub rps: Repeated,
    /// PostgreSQL's processes, µs per request.
    pub database_us: Repeated,
    /// The `timetrack` server's, µs per request.
    pub server_us: Repeated,
    /// PgBouncer's, µs per request (none when direct).
    pub pooler_us: Repeated,
    pub errors: usize,
}

/// One load, direct and through the pooler.
#[derive(Debug, Clone, Default)]
pub struct Load {
    pub name: &'static str,
    pub concurrency: usize,
    pub direct: Side,
    pub pooled: Side,
}

/// What the workload measured.
#[derive(Debug, Clone, Default)]
pub struct Pooled {
    pub loads: Vec<Load>,
}

/// Runs the workload.
pub async fn measure(env: &Environment, options: &Options, sizes: Sizes) -> Result<Pooled> {
    let search_ws = crate::search::seed(env, sizes).await?;
    let search_key = env.account_in(&search_ws.to_string()).await?.key;
    let reports_ws = crate::reports::workspace_id(sizes.report_entries);
    crate::reports::seed(env, reports_ws, sizes.report_entries).await?;
    let reports_key = crate::reports::owner_key(env, reports_ws).await?;
    let writer = env.account("Pooler writes").await?;

    progress("pooler: PgBouncer in transaction mode in front of the bench cluster");
    let upstream = env.database_url.clone();
    let bouncer =
        tokio::task::block_in_place(|| Pgbouncer::start_transaction_mode(&upstream, POOL_SIZE))?;
    let direct = env.start_server(options).await?;
    let pooled = env
        .start_server_with(
            options,
            &[
                ("DATABASE_URL", &bouncer.url()),
                ("TIMETRACK_DATABASE_POOLER", "transaction"),
                ("TIMETRACK_DATABASE_DIRECT_URL", &env.database_url),
            ],
        )
        .await?;

    let mut loads = vec![
        Load {
            name: "client created",
            concurrency: 8,
            ..Load::default()
        },
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
    let created = Arc::new(AtomicUsize::new(0));
    for _ in 0..sizes.runs {
        for (index, load) in loads.iter_mut().enumerate() {
            for (server, side, through) in [
                (&direct, &mut load.direct, false),
                (&pooled, &mut load.pooled, true),
            ] {
                let request: Requests = match index {
                    0 => {
                        let http = reqwest::Client::new();
                        let url = format!("{}/api/clients", server.base);
                        let (key, created) = (writer.key.clone(), created.clone());
                        Arc::new(move || {
                            let n = created.fetch_add(1, Ordering::Relaxed);
                            let req = http
                                .post(&url)
                                .bearer_auth(&key)
                                .json(&json!({"name": format!("Pooled {n}")}));
                            Box::pin(async move {
                                req.send().await.is_ok_and(|res| res.status() == 201)
                            })
                        })
                    }
                    1 => crate::loads::search_lo(server, &search_key, search_ws)?,
                    _ => crate::loads::month_summary(server, &reports_key),
                };
                let before = tree_ticks_us(bouncer.pid());
                let (rps, answered, errors, cpu) =
                    crate::search::drive(load.concurrency, sizes, server, move || request()).await;
                let pooler_us = tree_ticks_us(bouncer.pid()).saturating_sub(before);
                let cpu: CpuPerRequest = cpu.unwrap_or_default();
                side.rps.push(rps);
                side.database_us.push(cpu.database);
                side.server_us.push(cpu.server);
                if through {
                    side.pooler_us
                        .push(pooler_us as f64 / answered.0.len().max(1) as f64);
                }
                side.errors += errors;
            }
        }
    }
    for load in &loads {
        progress(&format!(
            "pooler: {}: {:.0} → {:.0} requests/s, database {:.0} → {:.0} µs/request, \
             PgBouncer {:.0} µs/request",
            load.name,
            load.direct.rps.median(),
            load.pooled.rps.median(),
            load.direct.database_us.median(),
            load.pooled.database_us.median(),
            load.pooled.pooler_us.median()
        ));
        if load.direct.errors + load.pooled.errors > 0 {
            bail!(
                "pooler: {} failed {} requests",
                load.name,
                load.direct.errors + load.pooled.errors
            );
        }
    }
    drop(pooled);
    drop(direct);
    drop(bouncer);
    Ok(Pooled { loads })
}
