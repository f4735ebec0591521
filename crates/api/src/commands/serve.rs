//! `timetrack serve`: the HTTP API.

use std::io::Write;
use std::sync::Arc;

use actix_web::HttpServer;
use anyhow::{Context, Result};
use std::time::Duration;

use timetrack_adapters::postgres::{
    LOOK_FOR_LISTENERS_EVERY, PgDeliveryQueue, PgHousekeeping, installation_masks, reseal_all,
    run_notifier,
};
use timetrack_adapters::postgres::{ReplicaWatch, build_replica_pool};
use timetrack_adapters::{
    HyperWebhookSender, OsRandom, SecretBox, SecretKey, SenderSettings, SystemClock, UuidV7Ids,
    WorkerSettings, build_pool, run_housekeeping, run_listener, run_worker,
};
use timetrack_domain::delivery::InFlightCaps;
use timetrack_domain::ports::Retention;
use timetrack_domain::ratelimit::RatePolicy;
use timetrack_domain::services::WebhookSettings;
use timetrack_domain::services::{DeliveryService, DeliverySettings};
use tokio::sync::watch;

use super::{Database, demo};
use crate::app::build_app;
use crate::config::{GlobalSettings, RateLimitStoreArg, ServeSettings};
use crate::metrics::{MetricsState, metrics_app};
use crate::replica::Routing;
use crate::state::{AppState, RateLimitStoreKind, RateLimits, StateSettings};

/// Connections of the delivery worker, beside `--db-pool-size`: one for its rounds (one at a
/// time), one for an attempt that ends its subscription.
const DELIVERY_CONNECTIONS: usize = 2;
/// Connections of the background tasks (start-up, the delivery notifier, housekeeping, the
/// metrics listener), beside `--db-pool-size`.
const BACKGROUND_CONNECTIONS: usize = 4;
/// Client searches running on the database at once per CPU unless `--search-concurrency` says
/// otherwise. Divided among the workers, like the pools, so a finished search hands its slot to
/// a search on the same thread (a slot shared by every worker costs two cross-thread wake-ups
/// per search). Counted per CPU rather than per worker: one worker must admit more searches
/// than the database has CPUs, so that one runs on the database while the worker encodes
/// another's rows, but not so many that a common word's searches only share the CPUs and
/// lengthen the tail (ADRs 0011 and 0012 in docs/adr/; figures in docs/benchmarks.md).
const SEARCHES_PER_CPU: usize = 3;
/// Kernel send and receive buffer of each API connection (Linux reserves twice this). Without a
/// cap, autotuning lets a client that never reads its responses park megabytes of them in the
/// kernel per connection; with it, the server's writes block after about 256 KiB, and the
/// HTTP/1 dispatcher (actix-http patched in `vendor/`) then stops reading that connection's
/// requests once 16 wait. Request bodies are at most 64 KiB and responses small JSON, so
/// 256 KiB in flight still keeps a connection 100 ms away at about 2.5 MB/s.
const CONNECTION_SOCKET_BUFFER: usize = 128 * 1024;
/// Seconds requests in flight get to finish once the API is asked to stop.
const SHUTDOWN_SECONDS: u64 = 10;

pub(super) async fn serve(global: &GlobalSettings, settings: &ServeSettings) -> Result<()> {
    let secrets = secret_box(global, settings)?;
    let db = Database::open(global).await?;
    let result = run_server(global, settings, &db, secrets).await;
    db.close().await;
    result
}

/// The key that seals webhook secrets at rest: `--secret-key`, or for the private cluster the
/// one kept in `<data-dir>/secret.key` (made on first start).
fn secret_box(global: &GlobalSettings, settings: &ServeSettings) -> Result<SecretBox> {
    let current = match &settings.secret_key {
        Some(key) => key.clone(),
        None if global.database_url.is_none() => private_secret_key(&global.data_dir)?,
        None => anyhow::bail!(
            "TIMETRACK_SECRET_KEY (--secret-key) is required with DATABASE_URL: it encrypts \
             webhook signing secrets in the database. Generate one with `openssl rand -base64 32` \
             and keep it with the database's credentials (docs/operations.md#secrets-at-rest)"
        ),
    };
    Ok(SecretBox::new(&current, &settings.previous_secret_keys))
}

/// The private cluster's secret key, from `dir/secret.key`, written there (readable by its
/// owner only) on first use.
fn private_secret_key(dir: &std::path::Path) -> Result<SecretKey> {
    let path = dir.join("secret.key");
    match std::fs::read_to_string(&path) {
        Ok(text) => SecretKey::parse(&text).with_context(|| format!("reading {}", path.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let key = SecretKey::generate();
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            writeln!(file, "{}", key.to_base64())
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(key)
        }
        Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
    }
}

async fn run_server(
    global: &GlobalSettings,
    settings: &ServeSettings,
    db: &Database,
    secrets: SecretBox,
) -> Result<()> {
    // Each HTTP worker thread gets a share of `--db-pool-size` as a pool of its own. A
    // connection is driven by a task on the thread that opened it, so a request served on one
    // worker with a connection opened on another paid two cross-thread wake-ups per round trip.
    let pool_of = |max_size| build_pool(db.url(), db.pool_settings(max_size));
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    // The private cluster is reached at 127.0.0.1, so its URL says it is local too.
    let local_db = timetrack_adapters::is_on_this_machine(db.url());
    let workers = http_workers(settings, cpus, local_db);
    tracing::info!(
        workers,
        cpus,
        database_on_this_machine = local_db,
        "HTTP workers"
    );
    let per_worker = usize::from(settings.db_pool_size).div_ceil(workers).max(1);
    let worker_pools = (0..workers)
        .map(|_| pool_of(per_worker))
        .collect::<Result<Vec<_>>>()?;
    // With a replica, each worker has a pool of the replica's too, of the same size, and one
    // more pool samples how far behind it is.
    let replica_url = settings
        .database_replica_url
        .as_deref()
        .filter(|url| !url.is_empty());
    let replica = match replica_url {
        Some(url) => {
            let replica_of = |max_size| build_replica_pool(url, db.pool_settings(max_size));
            let pools = (0..workers)
                .map(|_| replica_of(per_worker))
                .collect::<Result<Vec<_>>>()?;
            let max_lag = settings.replica_max_lag.unsigned_abs();
            tracing::info!(
                max_lag_ms = max_lag.as_millis(),
                "reads that tolerate lag may use the replica"
            );
            Some((pools, replica_of(1)?, ReplicaWatch::new(max_lag)))
        }
        None => None,
    };
    // Start-up, the notifier, housekeeping, the metrics listener and the demo key use a small
    // pool of their own.
    let pool = pool_of(BACKGROUND_CONNECTIONS)?;
    // The delivery worker has connections of its own, so its rounds never wait behind API
    // requests for a pooled connection.
    let delivery_pool = pool_of(DELIVERY_CONNECTIONS)?;
    // Values from before encryption at rest, or sealed under a key since rotated, are sealed
    // under the current key before anything reads them.
    let resealed = reseal_all(&pool, &secrets)
        .await
        .context("sealing stored secrets under TIMETRACK_SECRET_KEY")?;
    if resealed != Default::default() {
        tracing::info!(
            webhook_secrets = resealed.webhook_secrets,
            webhook_headers = resealed.webhook_headers,
            idempotent_responses = resealed.idempotent_responses,
            key = secrets.current_id(),
            "stored secrets sealed under the current key"
        );
    }
    // On the private cluster (a development set-up), `timetrack listen` may receive deliveries
    // on this machine: its CA is trusted and the ports it registers may be subscribed.
    let local_receivers = db
        .is_private()
        .then(|| timetrack_adapters::ListenDir::new(&global.data_dir));
    let delivery = delivery_service(settings, &delivery_pool, &secrets, local_receivers.clone())?;
    let demo = if db.is_private() {
        Some(demo::ensure_demo(&global.data_dir, &pool).await?)
    } else {
        None
    };
    let retention = Retention {
        events: time::Duration::days(i64::from(settings.event_retention_days)),
        deliveries: time::Duration::days(i64::from(settings.delivery_retention_days)),
    };
    let state = AppState::new(
        pool.clone(),
        Arc::new(SystemClock),
        StateSettings {
            auth_cache_ttl: time::Duration::seconds(i64::from(settings.auth_cache_seconds)),
            webhooks: WebhookSettings {
                allow_private_targets: settings.webhook_allow_private_targets,
                retention: retention.deliveries,
                event_retention: retention.events,
                requeue_per_minute: settings.webhook_requeue_per_minute,
                ..WebhookSettings::default()
            },
            rate_limits: RateLimits {
                per_key: RatePolicy {
                    per_minute: settings.rate_limit_per_minute,
                    per_second: settings.rate_limit_per_second,
                },
                auth_failures: RatePolicy {
                    per_minute: settings.auth_failures_per_minute,
                    per_second: u32::MAX,
                },
            },
            rate_limit_store: match settings.rate_limit_store {
                RateLimitStoreArg::Memory => RateLimitStoreKind::Memory,
                RateLimitStoreArg::Postgres => RateLimitStoreKind::Postgres,
            },
            search_concurrency: Some(searches_per_worker(settings, workers, cpus)),
            local_receivers: local_receivers
                .map(|dir| Arc::new(dir) as Arc<dyn timetrack_domain::ports::LocalReceivers>),
            trusted_proxies: settings.trusted_proxies.clone(),
            secrets: secrets.clone(),
            masks: installation_masks(&pool).await?,
            ..StateSettings::default()
        },
    );
    let metrics = state.metrics.clone();
    let announcer = state.announcer.clone();
    let invoices = state.invoices.clone();
    let keys = state.keys.clone();
    // Another `serve` of this data directory, named when a port it holds is taken.
    let running = if db.is_private() {
        running_here(&global.data_dir)
    } else {
        None
    };
    let metrics_server = metrics_server(
        settings,
        &pool,
        metrics.clone(),
        &secrets,
        running.as_deref(),
    )?;
    let next_pool = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let routing = replica
        .as_ref()
        .map(|(pools, _, watch)| (pools.clone(), Routing::new(watch.clone())));
    let server = HttpServer::new(move || {
        // Called once on each worker thread (again if actix restarts one).
        let index = next_pool.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = state.on_pool(worker_pools[index % worker_pools.len()].clone());
        build_app(match &routing {
            Some((pools, routing)) => {
                state.with_replica(pools[index % pools.len()].clone(), routing.clone())
            }
            None => state,
        })
    })
    .workers(workers)
    // Signals are handled below: actix's own handling stops at once on SIGINT ("forced
    // shutdown"), and Ctrl-C should let requests in flight finish.
    .disable_signals()
    // Before `bind`: a listener takes the callback it has when bound.
    .on_connect(cap_socket_buffers)
    .bind(&settings.bind)
    .map_err(|err| listen_error(&err, &settings.bind, Listener::Api, running.as_deref()))?
    .shutdown_timeout(SHUTDOWN_SECONDS);
    let addrs = server.addrs();
    let base_url = addrs
        .first()
        .map(|a| format!("http://{a}"))
        .unwrap_or_else(|| format!("http://{}", settings.bind));
    tracing::info!(%base_url, "listening");
    let pid_file = db
        .is_private()
        .then(|| global.data_dir.join(PID_FILE))
        .filter(|path| {
            std::fs::write(path, format!("{} {base_url}\n", std::process::id()))
                .inspect_err(|err| tracing::warn!(%err, path = %path.display(), "cannot write"))
                .is_ok()
        });
    if let Some(demo) = &demo {
        let mut out = std::io::stdout().lock();
        out.write_all(demo::banner(&base_url, &global.data_dir, demo).as_bytes())?;
        out.flush()?;
    }
    // The delivery workers run beside the API, woken by this process's writes at once and by the
    // other processes' notifications.
    let wake = announcer.local_wake();
    let (stop, stopped) = watch::channel(false);
    let notifier = tokio::spawn(run_notifier(
        pool.clone(),
        announcer.clone(),
        LOOK_FOR_LISTENERS_EVERY,
        stopped.clone(),
    ));
    let worker = tokio::spawn(run_worker(
        delivery,
        metrics,
        wake,
        WorkerSettings {
            concurrency: settings.webhook_concurrency as usize,
            // Within the lease (four times the request time-out), so an abandoned attempt is
            // never still running when its delivery is claimed again.
            attempt_deadline: Duration::from_secs(settings.webhook_timeout * 2 + 5),
            ..WorkerSettings::default()
        },
        stopped.clone(),
    ));
    let listener = tokio::spawn(run_listener(
        db.direct_url().to_owned(),
        pool.clone(),
        announcer,
        stopped.clone(),
    ));
    let replica_watch = replica.map(|(_, replica_pool, watch)| {
        tokio::spawn(watch.run(pool.clone(), replica_pool, stopped.clone()))
    });
    let housekeeping = tokio::spawn(run_housekeeping(
        Arc::new(PgHousekeeping::new(pool.clone())),
        invoices,
        keys,
        Arc::new(SystemClock),
        retention,
        Duration::from_secs(600),
        stopped,
    ));

    // The API stops gracefully on SIGINT (Ctrl-C) and SIGTERM; the workers and the private
    // cluster after it.
    let metrics_handle = metrics_server.map(|server| {
        let handle = server.handle();
        tokio::spawn(server);
        handle
    });
    let server = server.run();
    let stopping = tokio::spawn(stop_on_signal(server.handle()));
    let served = server.await.context("running the HTTP server");
    stopping.abort();
    if let Some(handle) = metrics_handle {
        handle.stop(true).await;
    }
    let _ = stop.send(true);
    let _ = tokio::join!(worker, listener, notifier, housekeeping);
    if let Some(watch) = replica_watch {
        let _ = watch.await;
    }
    if let Some(path) = pid_file {
        let _ = std::fs::remove_file(path);
    }
    tracing::info!("stopped");
    served
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM, then stops the API gracefully: no new connections,
/// requests in flight finish (up to the shutdown time-out). A second signal stops it at once.
async fn stop_on_signal(server: actix_web::dev::ServerHandle) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::warn!("cannot listen for SIGINT/SIGTERM; stop the process with SIGKILL");
        return;
    };
    let name = tokio::select! {
        _ = interrupt.recv() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    };
    tracing::info!(
        signal = name,
        "stopping: requests in flight finish first (up to {SHUTDOWN_SECONDS} s; again to stop now)"
    );
    let graceful = tokio::spawn(server.clone().stop(true));
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
        _ = graceful => return,
    }
    tracing::warn!("second signal: stopping now, without waiting for requests in flight");
    server.stop(false).await;
}

/// A listener of `serve`, for the errors that name the setting behind it.
#[derive(Debug, Clone, Copy)]
enum Listener {
    /// `--bind`.
    Api,
    /// `--metrics-bind`.
    Metrics,
}

impl Listener {
    /// What listens, the flag and the variable that set its address, and a last resort.
    fn names(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Self::Api => ("the API", "--bind", "TIMETRACK_BIND", ""),
            Self::Metrics => (
                "metrics",
                "--metrics-bind",
                "TIMETRACK_METRICS_BIND",
                " (or --metrics-bind off for no metrics listener)",
            ),
        }
    }
}

/// The file in the private cluster's data directory naming the `serve` that runs on it:
/// `<pid> <API URL>`, written once the API listens and removed when it stops.
const PID_FILE: &str = "serve.pid";

/// The `serve` that [`PID_FILE`] names in `data_dir`, if it is another process and still runs:
/// "timetrack is already running here (pid N, data dir X, API on URL)".
fn running_here(data_dir: &std::path::Path) -> Option<String> {
    let (pid, url) = running_serve(data_dir)?;
    if u32::try_from(pid).ok()? == std::process::id() {
        return None;
    }
    Some(format!(
        "timetrack is already running here (pid {pid}, data dir {}, API on {url})",
        data_dir.display()
    ))
}

/// The pid and API URL of the `serve` that [`PID_FILE`] names in `data_dir`, if it still runs
/// (Linux's /proc says so; its name guards against a reused pid).
pub(crate) fn running_serve(data_dir: &std::path::Path) -> Option<(i32, String)> {
    let text = std::fs::read_to_string(data_dir.join(PID_FILE)).ok()?;
    let (pid, url) = text.trim().split_once(' ')?;
    let pid: i32 = pid.parse().ok()?;
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    name.trim()
        .starts_with("timetrack")
        .then(|| (pid, url.to_owned()))
}

/// Why `address` cannot be listened on, naming the flag that sets it and what to change, and
/// the `serve` already `running` on this data directory, if any.
fn listen_error(
    err: &std::io::Error,
    address: &str,
    listener: Listener,
    running: Option<&str>,
) -> anyhow::Error {
    let (what, flag, env, last_resort) = listener.names();
    let hint = match err.kind() {
        std::io::ErrorKind::AddrInUse if running.is_some() => format!(
            "{}; stop it first (Ctrl-C in its terminal), or pick another port with {flag} (or \
             {env})",
            running.unwrap_or_default()
        ),
        std::io::ErrorKind::AddrInUse => format!(
            "another process listens there; stop it, or pick another port with {flag} \
             (or {env}), e.g. {flag} 127.0.0.1:0 for any free port"
        ),
        std::io::ErrorKind::AddrNotAvailable => format!(
            "no interface of this machine has that address; use 127.0.0.1 or 0.0.0.0 in {flag}"
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!("ports below 1024 need privileges; pick a port above 1023 with {flag}")
        }
        _ => format!("check {flag} (or {env})"),
    };
    anyhow::anyhow!("cannot listen for {what} on {address}: {err}; {hint}{last_resort}")
}

/// Caps the kernel buffers of an accepted API connection at [`CONNECTION_SOCKET_BUFFER`].
fn cap_socket_buffers(connection: &dyn std::any::Any, _: &mut actix_web::dev::Extensions) {
    if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
        let socket = socket2::SockRef::from(tcp);
        let capped = socket
            .set_send_buffer_size(CONNECTION_SOCKET_BUFFER)
            .and_then(|()| socket.set_recv_buffer_size(CONNECTION_SOCKET_BUFFER));
        if let Err(err) = capped {
            tracing::warn!(%err, "could not cap a connection's socket buffers");
        }
    }
}

/// The metrics listener on `TIMETRACK_METRICS_BIND`, bound but not yet running; `None` when
/// it is `off`. A taken address names the `serve` already `running` on this data directory.
fn metrics_server(
    settings: &ServeSettings,
    pool: &timetrack_adapters::PgPool,
    metrics: Arc<timetrack_adapters::Metrics>,
    secrets: &SecretBox,
    running: Option<&str>,
) -> Result<Option<actix_web::dev::Server>> {
    if settings.metrics_bind.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let state = MetricsState {
        metrics,
        queue: Arc::new(PgDeliveryQueue::new(pool.clone(), secrets.clone())),
        clock: Arc::new(SystemClock),
    };
    let server = HttpServer::new(move || metrics_app(state.clone()))
        .workers(1)
        .disable_signals()
        .bind(&settings.metrics_bind)
        .map_err(|err| listen_error(&err, &settings.metrics_bind, Listener::Metrics, running))?;
    for addr in server.addrs() {
        tracing::info!(metrics_url = %format!("http://{addr}/metrics"), "metrics listening");
    }
    Ok(Some(server.shutdown_timeout(2).run()))
}

/// The delivery service with the HTTPS sender, from the webhook settings.
fn delivery_service(
    settings: &ServeSettings,
    pool: &timetrack_adapters::PgPool,
    secrets: &SecretBox,
    local_receivers: Option<timetrack_adapters::ListenDir>,
) -> Result<DeliveryService> {
    let timeout = Duration::from_secs(settings.webhook_timeout);
    let sender = HyperWebhookSender::new(SenderSettings {
        total_timeout: timeout,
        connect_timeout: timeout.min(Duration::from_secs(5)),
        allow_private_targets: settings.webhook_allow_private_targets,
        extra_roots: settings.webhook_root_certs.clone(),
        local_receivers,
        ..SenderSettings::default()
    })
    .context("setting up the webhook sender")?;
    let schedule = settings.webhook_retry_schedule.clone();
    // The lease outlives any attempt, so a live worker never loses its claim.
    let lease = time::Duration::seconds(
        i64::try_from(settings.webhook_timeout * 4)
            .unwrap_or(600)
            .max(60),
    );
    Ok(DeliveryService::new(
        Arc::new(PgDeliveryQueue::new(pool.clone(), secrets.clone())),
        Arc::new(sender),
        Arc::new(SystemClock),
        Arc::new(UuidV7Ids),
        Arc::new(OsRandom),
        DeliverySettings {
            schedule,
            lease,
            max_in_flight_per_subscription: settings.webhook_max_in_flight,
            max_in_flight_per_workspace: settings
                .webhook_max_in_flight_per_workspace
                .unwrap_or_else(|| {
                    InFlightCaps::default_workspace_share(settings.webhook_concurrency as usize)
                }),
            disable_after: settings.webhook_disable_after,
            failing_after: settings.webhook_failing_after,
        },
    ))
}

/// HTTP worker threads: `--http-workers`, or one per CPU, or one per two CPUs (at least one) when
/// the database shares the machine. A worker beyond what the CPUs left to it can run adds sleeps
/// and wake-ups to every request, and each wake-up is a thread switch on CPUs the database needs
/// (ADR 0012 in docs/adr/; figures in docs/benchmarks.md).
fn http_workers(settings: &ServeSettings, cpus: usize, database_on_this_machine: bool) -> usize {
    settings.http_workers.map_or_else(
        || {
            if database_on_this_machine {
                (cpus / 2).max(1)
            } else {
                cpus.max(1)
            }
        },
        usize::from,
    )
}

/// Searches each worker admits at once: `--search-concurrency`, or [`SEARCHES_PER_CPU`] per CPU,
/// divided among the workers (rounded up, so at least one).
fn searches_per_worker(settings: &ServeSettings, workers: usize, cpus: usize) -> usize {
    let total = settings
        .search_concurrency
        .map_or(SEARCHES_PER_CPU * cpus.max(1), usize::from);
    total.div_ceil(workers.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Cli, Command};

    fn settings(args: &[&str]) -> ServeSettings {
        let mut all = vec!["timetrack", "serve"];
        all.extend_from_slice(args);
        match Cli::parse_args(all).unwrap().command {
            Some(Command::Serve(s)) => *s,
            other => panic!("{other:?}"),
        }
    }

    fn pool() -> timetrack_adapters::PgPool {
        // Never connects: binding the listener does not touch the database.
        build_pool(
            "postgres://nobody@127.0.0.1:1/none",
            timetrack_adapters::PoolSettings::default(),
        )
        .unwrap()
    }

    #[test]
    fn searches_are_divided_among_the_workers() {
        // Three per CPU by default, whatever the number of workers.
        assert_eq!(searches_per_worker(&settings(&[]), 2, 2), 3);
        assert_eq!(searches_per_worker(&settings(&[]), 1, 2), 6);
        assert_eq!(searches_per_worker(&settings(&[]), 8, 8), 3);
        assert_eq!(searches_per_worker(&settings(&[]), 4, 8), 6);
        assert_eq!(searches_per_worker(&settings(&[]), 4, 1), 1);
        let five = settings(&["--search-concurrency", "5"]);
        assert_eq!(searches_per_worker(&five, 2, 2), 3);
        assert_eq!(searches_per_worker(&five, 1, 2), 5);
        assert_eq!(searches_per_worker(&five, 8, 8), 1);
        for bad in ["0", "-1", "1001", "two"] {
            let args = ["timetrack", "serve", "--search-concurrency", bad];
            assert!(Cli::parse_args(args).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_database_on_this_machine_leaves_it_half_the_cpus() {
        let default = settings(&[]);
        assert_eq!(http_workers(&default, 2, false), 2);
        assert_eq!(http_workers(&default, 2, true), 1);
        assert_eq!(http_workers(&default, 8, true), 4);
        assert_eq!(http_workers(&default, 1, true), 1);
        assert_eq!(http_workers(&default, 1, false), 1);
        let three = settings(&["--http-workers", "3"]);
        assert_eq!(http_workers(&three, 2, true), 3);
        assert_eq!(http_workers(&three, 8, false), 3);
        for bad in ["0", "257", "many"] {
            let args = ["timetrack", "serve", "--http-workers", bad];
            assert!(Cli::parse_args(args).is_err(), "{bad}");
        }
    }

    #[actix_web::test]
    async fn accepted_connections_get_capped_socket_buffers() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        cap_socket_buffers(&accepted, &mut actix_web::dev::Extensions::new());
        let socket = socket2::SockRef::from(&accepted);
        // Linux reports twice the value set (the kernel's bookkeeping share).
        for size in [socket.send_buffer_size(), socket.recv_buffer_size()] {
            let size = size.unwrap();
            assert!(
                (CONNECTION_SOCKET_BUFFER..=2 * CONNECTION_SOCKET_BUFFER).contains(&size),
                "{size}"
            );
        }
    }

    #[actix_web::test]
    async fn the_metrics_listener_is_on_by_default_and_off_means_none() {
        assert_eq!(settings(&[]).metrics_bind, "127.0.0.1:9464");
        let metrics = Arc::new(timetrack_adapters::Metrics::new());
        for off in ["off", "OFF"] {
            let none = metrics_server(
                &settings(&["--metrics-bind", off]),
                &pool(),
                metrics.clone(),
                &SecretBox::ephemeral(),
                None,
            );
            assert!(none.unwrap().is_none());
        }
        let bound = metrics_server(
            &settings(&["--metrics-bind", "127.0.0.1:0"]),
            &pool(),
            metrics.clone(),
            &SecretBox::ephemeral(),
            None,
        )
        .unwrap()
        .expect("a listener");
        let handle = bound.handle();
        actix_web::rt::spawn(bound);
        handle.stop(false).await;
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let err = metrics_server(
            &settings(&["--metrics-bind", &addr]),
            &pool(),
            metrics,
            &SecretBox::ephemeral(),
            None,
        )
        .err()
        .expect("an address in use is an error");
        assert!(
            err.to_string().contains("cannot listen for metrics on")
                && err.to_string().contains("--metrics-bind"),
            "{err}"
        );
    }
}
