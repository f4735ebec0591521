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

use crate::env::{Db, Env, arrivals, arrived, held_by_lease};
use crate::faults::{LEASED, Sample, drain, sampler, wait_until};
use crate::scenario::{Scenario, say};

/// Keys (each its own workspace) creating clients at once.
const KEYS: usize = 4;
/// Subscriptions per workspace.
const SUBSCRIBERS: usize = 2;

/// What is done to the database under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The primary's host dies; a standby is promoted.
    KillAndPromote,
    /// As `KillAndPromote`, then the old primary comes back (as a replica).
    KillAndRejoin,
    /// A planned switchover.
    Switchover,
}

/// The database under test.
enum Cluster {
    /// Two plain clusters; the standby promoted by hand `promote_after` the kill.
    Pair(ReplicaPair, Duration),
    /// Patroni with etcd.
    Patroni(crate::patroni::PatroniCluster),
}

/// When the fault began and when a primary was back (for a switchover: when it had ended).
struct Inflicted {
    began: Instant,
    ended: Instant,
    what: String,
}

impl Cluster {
    fn url(&self, database: &str) -> String {
        match self {
            Self::Pair(pair, _) => pair.url(database),
            Self::Patroni(cluster) => cluster.url(database),
        }
    }

    async fn inflict(&mut self, fault: Fault) -> Result<Inflicted> {
        match (self, fault) {
            (Self::Pair(pair, promote_after), Fault::KillAndPromote) => {
                pair.kill_primary();
                let began = Instant::now();
                tokio::time::sleep(*promote_after).await;
                pair.promote().await?;
                Ok(Inflicted {
                    began,
                    ended: Instant::now(),
                    what: "primary killed, standby promoted by pg_promote".into(),
                })
            }
            (Self::Pair(..), _) => anyhow::bail!("two plain clusters only fail over"),
            (Self::Patroni(cluster), Fault::Switchover) => {
                let from = cluster.leader().await.context("no leader")?;
                let to = (from + 1) % 3;
                let began = Instant::now();
                let (config_from, config_to) = (from, to);
                let names = (cluster.name(from).to_owned(), cluster.name(to).to_owned());
                // patronictl blocks until the switchover is done.
                tokio::task::block_in_place(|| cluster.switchover(config_from, config_to))?;
                let leader = cluster
                    .wait_for_leader(Some(from), Duration::from_secs(60))
                    .await?;
                Ok(Inflicted {
                    began,
                    ended: Instant::now(),
                    what: format!(
                        "switchover {} -> {} ({} leads)",
                        names.0,
                        names.1,
                        cluster.name(leader)
                    ),
                })
            }
            (Self::Patroni(cluster), fault) => {
                let old = cluster.leader().await.context("no leader")?;
                cluster.kill_member(old)?;
                let began = Instant::now();
                let leader = cluster
                    .wait_for_leader(Some(old), Duration::from_secs(60))
                    .await?;
                let ended = Instant::now();
                let mut what = format!(
                    "{} killed (Patroni and postmaster), {} promoted by Patroni",
                    cluster.name(old),
                    cluster.name(leader)
                );
                if fault == Fault::KillAndRejoin {
                    cluster.start_member(old)?;
                    cluster
                        .wait_for_replicas(2, Duration::from_secs(90))
                        .await
                        .context("the old leader did not rejoin as a replica")?;
                    what.push_str(&format!(", {} back as a replica", cluster.name(old)));
                }
                Ok(Inflicted { began, ended, what })
            }
        }
    }
}

/// Both modes on two plain clusters (quick and full runs), then, in the full run, the Patroni
/// runs.
pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    for replication in [Replication::Asynchronous, Replication::Synchronous] {
        let mode = match replication {
            Replication::Asynchronous => "asynchronous",
            Replication::Synchronous => "synchronous",
        };
        let dir = env.dir.clone();
        let pair = tokio::task::spawn_blocking(move || ReplicaPair::start(Some(&dir), replication))
            .await??;
        let promote_after = Duration::from_secs(if env.quick { 1 } else { 3 });
        let mut cluster = Cluster::Pair(pair, promote_after);
        under_load(
            env,
            s,
            mode,
            replication == Replication::Synchronous,
            &mut cluster,
            Fault::KillAndPromote,
        )
        .await?;
    }
    if env.quick {
        return Ok(());
    }
    use crate::patroni::{Mode, PatroniCluster};
    for (label, mode, fault) in [
        (
            "Patroni, asynchronous",
            Mode::Asynchronous,
            Fault::KillAndPromote,
        ),
        (
            "Patroni, synchronous strict",
            Mode::SynchronousStrict,
            Fault::KillAndPromote,
        ),
        (
            "Patroni, asynchronous, old leader rejoins",
            Mode::Asynchronous,
            Fault::KillAndRejoin,
        ),
        (
            "Patroni, planned switchover",
            Mode::Asynchronous,
            Fault::Switchover,
        ),
    ] {
        say(&format!(
            "  {label}: starting etcd and three Patroni members"
        ));
        let patroni = PatroniCluster::start(&env.dir, mode).await?;
        let mut cluster = Cluster::Patroni(patroni);
        under_load(
            env,
            s,
            label,
            mode == Mode::SynchronousStrict,
            &mut cluster,
            fault,
        )
        .await?;
    }
    Ok(())
}

async fn under_load(
    env: &Env,
    s: &mut Scenario,
    mode: &str,
    synchronous: bool,
    cluster: &mut Cluster,
    fault: Fault,
) -> Result<()> {
    let (before, after) = if env.quick { (3, 5) } else { (10, 15) };
    let admin_url = cluster.url("postgres");
    let url = cluster.url("timetrack");
    // The database, on the primary.
    Db::connect(&timetrack_adapters::postgres::for_writes(&admin_url))
        .await?
        .execute("CREATE DATABASE timetrack")
        .await?;
    let primary = timetrack_adapters::postgres::for_writes(&url);
    let receiver = HttpsReceiver::start().await;
    let log = format!(
        "failover-{}",
        mode.replace([',', ' '], "-").replace("--", "-")
    );
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
            let path = format!("/{log}/{k}/{n}");
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
    let leased_before = Db::connect(&primary).await?.count(LEASED).await?;
    let inflicted = cluster.inflict(fault).await?;
    let kill_at = inflicted.began.duration_since(start);
    let promoted_at = inflicted.ended.duration_since(start);
    say(&format!(
        "  {mode}: {} ({:.1} s to {:.1} s), {leased_before} deliveries leased before",
        inflicted.what,
        kill_at.as_secs_f64(),
        promoted_at.as_secs_f64()
    ));
    tokio::time::sleep(Duration::from_secs(after)).await;
    load_task.abort();
    // Answers still on their way.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let load = std::mem::take(&mut *load.lock().unwrap_or_else(|e| e.into_inner()));

    // What the new primary holds.
    let db = Db::connect(&primary).await?;
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
    let arrived = arrived(&received);
    let held = held_by_lease(&db, &path_of, &arrived).await?;
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
            .filter(|r| r.at + Duration::from_secs(1) >= inflicted.began && r.at <= ok)
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
    let (began, ended) = if fault == Fault::Switchover {
        ("the switchover began", "it ended")
    } else {
        ("the kill", "a primary was back (promoted)")
    };
    s.figure(format!("{mode}: what was done"), &inflicted.what);
    s.figure(
        format!("{mode}: writes again after {began}"),
        secs(writes_again.map(|at| at.saturating_sub(kill_at))),
    );
    s.figure(
        format!("{mode}: writes again after {ended}"),
        secs(writes_again.map(|at| at.saturating_sub(promoted_at))),
    );
    s.figure(
        format!("{mode}: deliveries again after writes"),
        secs(deliveries_again),
    );

    let unanswered: HashSet<String> = load
        .iter()
        .filter(|x| x.status == 0)
        .map(|x| crate::scenario::shorten(&x.body.to_string(), 160))
        .collect();
    s.check(
        format!("{mode}: every answer is 201 or 503, none missing"),
        statuses.keys().all(|status| [201, 503].contains(status)),
        format!("{statuses:?} {unanswered:?}"),
    );
    s.check(
        format!("{mode}: the server did not exit"),
        server.exited().is_none(),
        format!("{:?}", server.exited()),
    );
    if fault == Fault::Switchover {
        // Writes that never stopped count as back at once.
        let after_end = load
            .iter()
            .filter(|x| x.at >= promoted_at && x.status == 201)
            .map(|x| (x.at + x.latency).saturating_sub(promoted_at))
            .min();
        s.check(
            format!("{mode}: writes succeed within 1 s of the switchover's end"),
            after_end.is_some_and(|d| d <= Duration::from_secs(1)),
            secs(after_end),
        );
    } else {
        s.check(
            format!("{mode}: writes succeed again within 15 s of the kill"),
            writes_again.is_some_and(|at| at.saturating_sub(kill_at) <= Duration::from_secs(15)),
            secs(writes_again.map(|at| at.saturating_sub(kill_at))),
        );
    }
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
    if synchronous || fault == Fault::Switchover {
        s.check(
            format!("{mode}: no acknowledged write lost"),
            lost_writes == 0,
            format!("{lost_writes} of {} lost", acknowledged.len()),
        );
        s.check(
            format!("{mode}: no event delivered whose row was lost"),
            delivered_but_lost.is_empty(),
            format!("{}", delivered_but_lost.len()),
        );
    }
    drop(db);
    let _ = server.stop().context("stopping the server")?;
    Ok(())
}
