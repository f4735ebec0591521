//! Scenario 12: failover of the database under load. A primary and its streaming standby (two
//! plain clusters, the standby made by `pg_basebackup -R`), the service on a multi-host
//! `DATABASE_URL` naming both, clients created at a steady rate by several keys with webhooks
//! receiving; the primary's postmaster is killed with `SIGKILL` and the standby promoted
//! (`pg_promote`, as a failover manager would a moment later). Once with asynchronous
//! replication, once with synchronous: what was acknowledged and lost, what was delivered and
//! lost or sent twice, and how long writes and deliveries took to come back.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use timetrack_testkit::{HttpsReceiver, ReplicaPair, Replication};

use crate::env::{Db, Env, arrivals};
use crate::faults::{LEASED, Sample, drain, sampler, wait_until};
use crate::scenario::{Scenario, say};

/// Keys (each its own workspace) creating clients at once.
const KEYS: usize = 4;
/// Subscriptions per workspace.
const SUBSCRIBERS: usize = 2;

/// Both modes, one after the other.
pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    for replication in [Replication::Asynchronous, Replication::Synchronous] {
        one_failover(env, s, replication).await?;
    }
    Ok(())
}

async fn one_failover(env: &Env, s: &mut Scenario, replication: Replication) -> Result<()> {
    let mode = match replication {
        Replication::Asynchronous => "asynchronous",
        Replication::Synchronous => "synchronous",
    };
    let (before, promote_after, after) = if env.quick { (3, 1, 5) } else { (10, 3, 15) };
    let dir = env.dir.clone();
    let mut pair =
        tokio::task::spawn_blocking(move || ReplicaPair::start(Some(&dir), replication)).await??;
    pair.primary.ensure_database("timetrack").await?;
    let url = pair.url("timetrack");
    let receiver = HttpsReceiver::start().await;
    let log = format!("failover-{mode}");
    // Migrated by the admin commands, through the multi-host URL.
    let mut accounts = Vec::new();
    for k in 0..KEYS {
        accounts.push(env.account(&url, &format!("Failover {k}")).await?);
    }
    let mut server = env.serve(&url, &receiver, &log)?.start().await?;
    let mut path_of: HashMap<String, String> = HashMap::new();
    let mut paths_of_workspace: HashMap<String, Vec<String>> = HashMap::new();
    for (k, account) in accounts.iter().enumerate() {
        for n in 0..SUBSCRIBERS {
            let path = format!("/failover/{mode}/{k}/{n}");
            let (id, _) = server
                .subscribe(&account.key, &receiver.url(&path), &["CLIENT_CREATED"])
                .await?;
            path_of.insert(id, path.clone());
            paths_of_workspace
                .entry(account.workspace_id.clone())
                .or_default()
                .push(path);
        }
    }

    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()?;
    let start = Instant::now();
    let (base, keys) = (
        server.base.clone(),
        accounts.iter().map(|a| a.key.clone()).collect::<Vec<_>>(),
    );
    // 25 writes a second across the keys, each a client named after its number.
    let (load, load_task) = sampler(http, start, Duration::from_millis(40), move |h, n| {
        h.post(format!("{base}/api/clients"))
            .bearer_auth(&keys[n % keys.len()])
            .json(&json!({"name": format!("Failover client {n}")}))
    });

    tokio::time::sleep(Duration::from_secs(before)).await;
    let leased_before = Db::connect(&pair.primary.url("timetrack"))
        .await?
        .count(LEASED)
        .await?;
    pair.kill_primary();
    let kill_at = start.elapsed();
    let kill_instant = Instant::now();
    say(&format!(
        "  {mode}: primary killed at {:.1} s, {leased_before} deliveries leased",
        kill_at.as_secs_f64()
    ));
    tokio::time::sleep(Duration::from_secs(promote_after)).await;
    pair.promote().await?;
    let promoted_at = start.elapsed();
    say(&format!(
        "  {mode}: standby promoted at {:.1} s",
        promoted_at.as_secs_f64()
    ));
    tokio::time::sleep(Duration::from_secs(after)).await;
    load_task.abort();
    // Answers still on their way.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let load = std::mem::take(&mut *load.lock().unwrap_or_else(|e| e.into_inner()));

    // What the new primary holds.
    let db = Db::connect(&pair.standby.url("timetrack")).await?;
    let stored: HashSet<String> = db
        .rows("SELECT name FROM clients WHERE name LIKE 'Failover client %'")
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let events: Vec<(String, String)> = db
        .rows("SELECT id::text, workspace_id::text FROM events WHERE event_type = 'CLIENT_CREATED'")
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let expected: HashSet<(String, String)> = events
        .iter()
        .flat_map(|(event, workspace)| {
            paths_of_workspace
                .get(workspace)
                .into_iter()
                .flatten()
                .map(move |path| (path.clone(), event.clone()))
        })
        .collect();
    let (delivered, _) = drain(&receiver, expected.len(), Duration::from_secs(30)).await;
    let received = receiver.received();
    let arrived: HashSet<(String, String)> = received
        .iter()
        .map(|r| {
            (
                r.path.clone(),
                r.header("webhook-id").unwrap_or("").to_owned(),
            )
        })
        .collect();
    // Undelivered but held by a live lease of the new primary: sent when the lease expires.
    let mut held = 0;
    for row in db
        .rows(
            "SELECT d.event_id::text, d.subscription_id FROM deliveries d \
             WHERE d.status = 'PENDING' AND EXISTS (SELECT 1 FROM delivery_leases l \
               WHERE l.delivery_id = d.id AND l.expires_at > now())",
        )
        .await?
    {
        let (event, subscription): (String, String) = (row.get(0), row.get(1));
        let path = path_of.get(&subscription).cloned().unwrap_or_default();
        if !arrived.contains(&(path, event)) {
            held += 1;
        }
    }
    let lost_deliveries = expected
        .iter()
        .filter(|pair| !arrived.contains(*pair))
        .count()
        .saturating_sub(held);
    let stored_events: HashSet<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    let delivered_but_lost: HashSet<&str> = received
        .iter()
        .filter_map(|r| r.header("webhook-id"))
        .filter(|id| !stored_events.contains(id))
        .collect();
    let (_, duplicates) = arrivals(&received);

    let acknowledged: Vec<&Sample> = load.iter().filter(|x| x.status == 201).collect();
    let acknowledged_names: Vec<String> = acknowledged
        .iter()
        .filter_map(|x| x.body["name"].as_str().map(str::to_owned))
        .collect();
    let lost_writes = acknowledged_names
        .iter()
        .filter(|name| !stored.contains(*name))
        .count();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for x in &load {
        *statuses.entry(x.status).or_default() += 1;
    }
    let writes_again = load
        .iter()
        .filter(|x| x.at >= kill_at && x.status == 201)
        .map(|x| x.at + x.latency)
        .min();
    let writes_again_instant = writes_again.map(|at| start + at);
    let deliveries_again = writes_again_instant.and_then(|ok| {
        received
            .iter()
            .filter(|r| r.at >= ok)
            .map(|r| r.at.duration_since(ok))
            .min()
    });
    let around = writes_again_instant.map_or(0, |ok| {
        received
            .iter()
            .filter(|r| r.at + Duration::from_secs(1) >= kill_instant && r.at <= ok)
            .count()
    });
    let bound = usize::try_from(leased_before)? + around;
    let listener_on_new_primary = wait_until(Duration::from_secs(15), async || {
        db.count(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name LIKE 'timetrack-listener %'",
        )
        .await
        .is_ok_and(|n| n > 0)
    })
    .await;

    let secs =
        |d: Option<Duration>| d.map_or("never".to_owned(), |d| format!("{:.2} s", d.as_secs_f64()));
    s.figure(format!("{mode}: writes acknowledged"), acknowledged.len());
    s.figure(
        format!("{mode}: of them found after the failover"),
        acknowledged.len() - lost_writes,
    );
    s.figure(format!("{mode}: acknowledged writes lost"), lost_writes);
    s.figure(format!("{mode}: answers"), format!("{statuses:?}"));
    s.figure(
        format!("{mode}: events delivered whose rows were lost"),
        delivered_but_lost.len(),
    );
    s.figure(
        format!("{mode}: deliveries expected / delivered / held by a lease / lost"),
        format!(
            "{} / {delivered} / {held} / {lost_deliveries}",
            expected.len()
        ),
    );
    s.figure(
        format!("{mode}: duplicates / bound (leased at the kill + arrivals around it)"),
        format!("{duplicates} / {bound}"),
    );
    s.figure(
        format!("{mode}: writes again after the kill"),
        secs(writes_again.map(|at| at.saturating_sub(kill_at))),
    );
    s.figure(
        format!("{mode}: writes again after the promotion"),
        secs(writes_again.map(|at| at.saturating_sub(promoted_at))),
    );
    s.figure(
        format!("{mode}: deliveries again after writes"),
        secs(deliveries_again),
    );

    s.check(
        format!("{mode}: every answer is 201 or 503, none missing"),
        statuses.keys().all(|status| [201, 503].contains(status)),
        format!("{statuses:?}"),
    );
    s.check(
        format!("{mode}: the server did not exit"),
        server.exited().is_none(),
        format!("{:?}", server.exited()),
    );
    s.check(
        format!("{mode}: writes succeed again within 15 s of the kill"),
        writes_again.is_some_and(|at| at.saturating_sub(kill_at) <= Duration::from_secs(15)),
        secs(writes_again.map(|at| at.saturating_sub(kill_at))),
    );
    s.check(
        format!("{mode}: deliveries flow again within 2 s of writes"),
        deliveries_again.is_some_and(|d| d <= Duration::from_secs(2)),
        secs(deliveries_again),
    );
    s.check(
        format!("{mode}: the listener is opened again on the new primary"),
        listener_on_new_primary,
        format!("{listener_on_new_primary}"),
    );
    s.check(
        format!("{mode}: no delivery lost of an event the new primary holds"),
        lost_deliveries == 0,
        format!("{lost_deliveries} lost, {held} held by a lease"),
    );
    s.check(
        format!("{mode}: duplicates at most what was in flight around the kill"),
        duplicates <= bound,
        format!("{duplicates} duplicates, bound {bound}"),
    );
    if replication == Replication::Synchronous {
        s.check(
            "synchronous: no acknowledged write lost",
            lost_writes == 0,
            format!("{lost_writes} of {} lost", acknowledged.len()),
        );
        s.check(
            "synchronous: no event delivered whose row was lost",
            delivered_but_lost.is_empty(),
            format!("{}", delivered_but_lost.len()),
        );
    }
    drop(db);
    let _ = server.stop().context("stopping the server")?;
    drop(pair);
    Ok(())
}
