//! The delivery worker: one loop that records finished attempts and claims due deliveries in one
//! round trip, and sends each claimed delivery on its own task. It is woken at once by this
//! process's writes and by `NOTIFY` from the others, by every attempt that finishes, and by a poll
//! as a backstop (for retries that come due, and for a lost listener connection).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use timetrack_domain::DomainError;
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, ClaimWhen, ClaimedDelivery, NextStep, QuickWorkspaces,
};
use timetrack_domain::ids::WorkspaceId;
use timetrack_domain::model::{DeliveryId, DeliveryKind, WebhookId};
use timetrack_domain::ports::{Clock, Housekeeping, Retention};
use timetrack_domain::services::DeliveryService;
use tokio::sync::{Notify, mpsc, watch};
use tokio_postgres::{AsyncMessage, NoTls};

use crate::metrics::Metrics;
use crate::postgres::{DELIVERY_CHANNEL, DeliveryAnnouncer};

/// Most deliveries claimed in one query.
const MAX_BATCH: usize = 100;

/// Longest wait for one record-and-claim statement; past it, it counts as failed.
const ROUND_TIMEOUT: Duration = Duration::from_secs(10);

/// How the worker runs.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSettings {
    /// Most attempts this process runs at once that are not slow (the process's slots).
    pub concurrency: usize,
    /// An attempt still unanswered after this long is slow: it leaves the process's slots (it
    /// still counts against its subscription's in-flight cap and its workspace's share), so that
    /// endpoints that hang cost their own subscriptions and workspaces, not the process.
    pub slow_after: Duration,
    /// Slow attempts beyond this many count against the process's slots again (a bound on what
    /// the process holds open at once).
    pub max_slow: usize,
    /// Longest sleep between claims when nothing wakes the worker.
    pub poll_interval: Duration,
    /// Longest time one attempt (send and record) may take; past it the attempt is abandoned and
    /// its lease left to expire. At most the lease.
    pub attempt_deadline: Duration,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            concurrency: 64,
            slow_after: Duration::from_secs(1),
            max_slow: 1024,
            poll_interval: Duration::from_millis(500),
            attempt_deadline: Duration::from_secs(30),
        }
    }
}

/// What a delivery's task hands back to the loop.
enum Finished {
    /// An attempt for the loop to record, with when its task started (just after the claim).
    Attempted(Box<(ClaimedDelivery, AttemptRecord, Instant)>),
    /// Nothing to record (the task recorded it itself, as it ended the subscription, or
    /// abandoned it to its lease): the workspace's slot is free.
    Released(WorkspaceId, DeliveryId),
}

/// The deliveries the process holds (claimed and not yet recorded): the attempts running, and
/// those finished and waiting to be recorded.
#[derive(Default)]
struct Held {
    /// When each attempt still running started, and its workspace.
    running_since: HashMap<DeliveryId, (Instant, WorkspaceId)>,
    /// Every delivery held, running or in `done`, per workspace (no entry for none).
    by_workspace: HashMap<WorkspaceId, u32>,
    /// Finished attempts for the next round.
    done: Vec<(ClaimedDelivery, AttemptRecord)>,
    /// When the attempt of each delivery of `done` started (just after its claim).
    started_at: Vec<Instant>,
    /// Which workspaces' endpoints answer quickly.
    quick: QuickWorkspaces,
}

impl Held {
    fn claimed(&mut self, delivery: &ClaimedDelivery) {
        self.running_since.insert(
            delivery.delivery_id,
            (Instant::now(), delivery.workspace_id),
        );
        *self.by_workspace.entry(delivery.workspace_id).or_default() += 1;
    }

    /// One delivery of `workspace` is no longer held.
    fn release(&mut self, workspace: WorkspaceId) {
        if let Some(n) = self.by_workspace.get_mut(&workspace) {
            *n -= 1;
            if *n == 0 {
                self.by_workspace.remove(&workspace);
            }
        }
    }

    fn settle(&mut self, finished: Finished) {
        match finished {
            Finished::Attempted(attempt) => {
                let (delivery, record, at) = *attempt;
                self.running_since.remove(&delivery.delivery_id);
                self.quick
                    .answered(delivery.workspace_id, at, Instant::now());
                self.done.push((delivery, record));
                self.started_at.push(at);
            }
            Finished::Released(workspace, delivery) => {
                self.running_since.remove(&delivery);
                self.release(workspace);
            }
        }
    }

    /// Slots free once `done` is recorded: the process's slots less the attempts running that
    /// are not slow, and less the slow ones beyond `settings.max_slow`.
    fn free(&self, settings: &WorkerSettings) -> usize {
        let running = self.running_since.len();
        let slow = self
            .running_since
            .values()
            .filter(|(at, _)| at.elapsed() >= settings.slow_after)
            .count();
        let held = running - slow + slow.saturating_sub(settings.max_slow);
        settings.concurrency.max(1).saturating_sub(held)
    }

    /// What stays held per workspace once `done` is recorded: the attempts still running.
    fn running(&self) -> Vec<(WorkspaceId, u32)> {
        let mut running = self.by_workspace.clone();
        for (delivery, _) in &self.done {
            if let Some(n) = running.get_mut(&delivery.workspace_id) {
                *n = n.saturating_sub(1);
            }
        }
        running.into_iter().filter(|(_, n)| *n > 0).collect()
    }

    /// When the next attempt running now turns slow, if one will.
    fn next_slow(&self, slow_after: Duration) -> Option<Instant> {
        self.running_since
            .values()
            .map(|(at, _)| *at)
            .filter(|at| at.elapsed() < slow_after)
            .min()
            .map(|at| at + slow_after)
    }

    /// The workspaces that may go past their share of the slots now: those whose endpoints
    /// answer quickly ([`QuickWorkspaces`]).
    fn unshared(&mut self) -> Vec<WorkspaceId> {
        let running = self.running_since.values().map(|(at, ws)| (*ws, *at));
        self.quick.unshared(running, Instant::now())
    }

    /// `done` is recorded.
    fn recorded(&mut self, metrics: &Metrics, failures: &mut FailureLog) {
        let now = Instant::now();
        let done = std::mem::take(&mut self.done);
        for (delivery, record) in &done {
            metrics.observe_attempt(record);
            failures.attempted(delivery, record, now);
            self.release(delivery.workspace_id);
        }
        self.started_at.clear();
    }

    /// Gives up the attempts of `done` started longer than `deadline` ago: their leases may have
    /// passed to another worker.
    fn expire(&mut self, deadline: Duration, metrics: &Metrics) {
        let done = std::mem::take(&mut self.done);
        let started_at = std::mem::take(&mut self.started_at);
        for (attempt, at) in done.into_iter().zip(started_at) {
            if at.elapsed() < deadline {
                self.done.push(attempt);
                self.started_at.push(at);
            } else {
                metrics.observe_record_error();
                self.release(attempt.0.workspace_id);
            }
        }
    }
}

/// Failed attempts logged at WARN, at most one line per subscription per [`FailureLog::EVERY`]:
/// a subscriber that is down for hours must not fill the log with one line per attempt. The
/// line after a quiet period says how many failures it stands for.
#[derive(Default)]
struct FailureLog {
    /// Per subscription: when its last line was written, and the failures since, unlogged.
    last: HashMap<WebhookId, (Instant, u64)>,
}

impl FailureLog {
    /// Shortest time between two lines about one subscription.
    const EVERY: Duration = Duration::from_secs(60);
    /// Subscriptions remembered before the quiet ones are forgotten.
    const MAX_REMEMBERED: usize = 10_000;

    /// Notes one recorded attempt; a failure is logged unless its subscription's last line is
    /// recent. Returns, for a logged failure, how many earlier ones its line stands for.
    fn attempted(
        &mut self,
        delivery: &ClaimedDelivery,
        record: &AttemptRecord,
        now: Instant,
    ) -> Option<u64> {
        if matches!(record.report.outcome, AttemptOutcome::Delivered { .. }) {
            return None;
        }
        if let Some((at, suppressed)) = self.last.get_mut(&delivery.subscription_id) {
            if now.duration_since(*at) < Self::EVERY {
                *suppressed += 1;
                return None;
            }
            let earlier = *suppressed;
            Self::warn(delivery, record, earlier);
            *at = now;
            *suppressed = 0;
            return Some(earlier);
        }
        if self.last.len() >= Self::MAX_REMEMBERED {
            self.last
                .retain(|_, (at, _)| now.duration_since(*at) < Self::EVERY);
        }
        Self::warn(delivery, record, 0);
        self.last.insert(delivery.subscription_id.clone(), (now, 0));
        Some(0)
    }

    /// One WARN line for a failed attempt.
    fn warn(delivery: &ClaimedDelivery, record: &AttemptRecord, earlier_unlogged: u64) {
        let outcome = match &record.report.outcome {
            AttemptOutcome::Delivered { status } | AttemptOutcome::Rejected { status, .. } => {
                format!("HTTP {status}")
            }
            AttemptOutcome::Failed { reason, detail } => format!("{}: {detail}", reason.as_str()),
        };
        let next = match record.next {
            NextStep::Done => "done".to_owned(),
            NextStep::RetryAt(at) => format!("retry at {}", timetrack_domain::timefmt::rfc3339(at)),
            NextStep::GiveUp if delivery.kind == DeliveryKind::Test => {
                "failed: a test delivery is tried once, without retries".to_owned()
            }
            NextStep::GiveUp => "failed for good: the retry schedule is exhausted".to_owned(),
            NextStep::Unsubscribe => "410 Gone: the subscription is deleted".to_owned(),
        };
        let next = if record.disable_subscription {
            format!("{next}; the subscription is disabled after failing for days")
        } else {
            next
        };
        tracing::warn!(
            webhook_id = %delivery.subscription_id,
            event_id = %delivery.event_id,
            attempt = delivery.attempts + 1,
            outcome,
            next,
            earlier_unlogged,
            "delivery attempt failed"
        );
    }
}

/// Runs the worker until `shutdown` becomes true.
///
/// Each round is one statement: the attempts finished since the last round are recorded, and as
/// many due deliveries as there are free slots are claimed, seeing the slots just freed. Rounds
/// run one at a time, so the attempts finishing during one are recorded together by the next:
/// alone, an attempt is recorded at once; under load, many share a round trip and a commit.
///
/// At shutdown, finished attempts are recorded (bounded to 2 s) and those still running are
/// abandoned: their leases expire and another worker sends them again (at-least-once).
pub async fn run_worker(
    service: DeliveryService,
    metrics: Arc<Metrics>,
    wake: Arc<Notify>,
    settings: WorkerSettings,
    mut shutdown: watch::Receiver<bool>,
) {
    let (finished_tx, mut finished_rx) = mpsc::unbounded_channel();
    let mut held = Held::default();
    let mut failures = FailureLog::default();
    let round_failures = crate::LogThrottle::new();
    // Whether to claim even with nothing to record: woken, polled, or the last claim was full.
    let mut claim = true;
    // The poll: a claim at least this often whatever else happens (retries that came due are
    // found by it), however busy the loop is with recording.
    let mut next_poll = tokio::time::Instant::now() + settings.poll_interval;
    loop {
        while let Ok(finished) = finished_rx.try_recv() {
            held.settle(finished);
        }
        if *shutdown.borrow() {
            if !held.done.is_empty() {
                let last = service.record_and_claim(
                    &held.done,
                    0,
                    ClaimWhen::IfHeldBack,
                    Vec::new(),
                    Vec::new(),
                );
                if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), last).await {
                    held.recorded(&metrics, &mut failures);
                }
            }
            return;
        }
        // A wake that came during the last round asks for a claim in this one, as does the poll.
        if wake.notified().now_or_never().is_some() || tokio::time::Instant::now() >= next_poll {
            claim = true;
        }
        let free = held.free(&settings).min(MAX_BATCH);
        if held.done.is_empty() && !(claim && free > 0) {
            // With a claim owed and every slot taken, the next slot may free by an attempt
            // turning slow, which nothing else announces.
            let next_slow = held.next_slow(settings.slow_after).filter(|_| claim);
            tokio::select! {
                Some(finished) = finished_rx.recv() => held.settle(finished),
                () = wake.notified() => claim = true,
                () = tokio::time::sleep_until(next_poll), if !claim => claim = true,
                () = sleep_until_some(next_slow), if next_slow.is_some() => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        // Not woken, and the last claim took less than it asked for: what is due now is what
        // the attempts being recorded held back, if anything, and the round looks for that.
        let when = if claim {
            next_poll = tokio::time::Instant::now() + settings.poll_interval;
            ClaimWhen::Always
        } else {
            ClaimWhen::IfHeldBack
        };
        let unshared = held.unshared();
        let round = service.record_and_claim(
            &held.done,
            u32::try_from(free).unwrap_or(0),
            when,
            held.running(),
            unshared,
        );
        let claimed = match tokio::time::timeout(ROUND_TIMEOUT, round).await {
            Ok(Ok(claimed)) => claimed,
            failed => {
                let error = match failed {
                    Ok(Err(err)) => err,
                    _ => DomainError::Unavailable("timed out".to_owned()),
                };
                if !matches!(error, DomainError::Unavailable(_)) && !held.done.is_empty() {
                    // Not the database's absence: something in the batch. Its attempts are
                    // recorded one at a time, so that one that cannot be written holds up no
                    // other delivery.
                    tracing::warn!(
                        %error,
                        attempts = held.done.len(),
                        "recording a batch of attempts failed; recording them one at a time"
                    );
                    record_apart(&service, &mut held, &metrics, &mut failures).await;
                    claim = true;
                    continue;
                }
                // Every poll while the database is away: logged once a second at most.
                if let Some(unlogged) = round_failures.admit() {
                    tracing::warn!(
                        %error,
                        attempts = held.done.len(),
                        unlogged_since_last = unlogged,
                        "recording attempts and claiming deliveries failed; retrying"
                    );
                }
                held.expire(settings.attempt_deadline, &metrics);
                claim = true;
                tokio::select! {
                    () = tokio::time::sleep(settings.poll_interval) => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
        };
        held.recorded(&metrics, &mut failures);
        // A claim that took all it asked for may have left more; with no free slot, no claim
        // ran and the need for one stands.
        if free > 0 {
            claim = claimed.len() == free;
        }
        for delivery in claimed {
            held.claimed(&delivery);
            tokio::spawn(attempt(
                service.clone(),
                metrics.clone(),
                delivery,
                settings.attempt_deadline,
                finished_tx.clone(),
            ));
        }
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// Records each attempt of `held.done` in a round of its own (claiming nothing), after their
/// batch failed for a reason other than the database's absence. An attempt whose record cannot
/// be written is logged at ERROR with its delivery, counted (`timetrack_webhook_record_errors`),
/// and recorded without the receiver's text ([`AttemptRecord::without_receiver_text`]); if even
/// that fails, it is given up to its lease, and sent again once that expires. Attempts that find
/// the database gone stay for the next round.
async fn record_apart(
    service: &DeliveryService,
    held: &mut Held,
    metrics: &Metrics,
    failures: &mut FailureLog,
) {
    let done = std::mem::take(&mut held.done);
    let started_at = std::mem::take(&mut held.started_at);
    for ((delivery, record), at) in done.into_iter().zip(started_at) {
        let error = match record_alone(service, &delivery, &record).await {
            Ok(()) => {
                metrics.observe_attempt(&record);
                failures.attempted(&delivery, &record, Instant::now());
                held.release(delivery.workspace_id);
                continue;
            }
            Err(DomainError::Unavailable(_)) => {
                held.done.push((delivery, record));
                held.started_at.push(at);
                continue;
            }
            Err(error) => error,
        };
        metrics.observe_record_error();
        tracing::error!(
            delivery_id = delivery.delivery_id.0,
            webhook_id = %delivery.subscription_id,
            event_id = %delivery.event_id,
            %error,
            "an attempt's record could not be written; recording it without the receiver's answer"
        );
        let stripped = record.without_receiver_text();
        match record_alone(service, &delivery, &stripped).await {
            Ok(()) => {
                metrics.observe_attempt(&stripped);
                held.release(delivery.workspace_id);
            }
            Err(DomainError::Unavailable(_)) => {
                held.done.push((delivery, stripped));
                held.started_at.push(at);
            }
            Err(error) => {
                tracing::error!(
                    delivery_id = delivery.delivery_id.0,
                    webhook_id = %delivery.subscription_id,
                    event_id = %delivery.event_id,
                    %error,
                    "an attempt could not be recorded; its lease will expire and it will be sent again"
                );
                held.release(delivery.workspace_id);
            }
        }
    }
}

/// Records one attempt in a round of its own that claims nothing.
async fn record_alone(
    service: &DeliveryService,
    delivery: &ClaimedDelivery,
    record: &AttemptRecord,
) -> Result<(), DomainError> {
    let one = [(delivery.clone(), record.clone())];
    match tokio::time::timeout(
        ROUND_TIMEOUT,
        service.record_and_claim(&one, 0, ClaimWhen::IfHeldBack, Vec::new(), Vec::new()),
    )
    .await
    {
        Ok(result) => result.map(|_| ()),
        Err(_) => Err(DomainError::Unavailable("timed out".to_owned())),
    }
}

/// Sends one claimed delivery and hands its attempt back to the loop; an attempt that ends its
/// subscription (rare) is recorded here, in a transaction of its own.
async fn attempt(
    service: DeliveryService,
    metrics: Arc<Metrics>,
    delivery: ClaimedDelivery,
    deadline: Duration,
    finished: mpsc::UnboundedSender<Finished>,
) {
    let started_at = Instant::now();
    let outcome = tokio::time::timeout(deadline, async {
        let record = service.attempt(&delivery).await?;
        if record.recorded_alone() {
            let noticed = service.record(&delivery, &record).await?;
            metrics.observe_attempt(&record);
            if record.ends_subscription() {
                // Rare, and the end of a subscription: always logged.
                FailureLog::warn(&delivery, &record, 0);
            }
            if let (true, Some(notice)) = (noticed, &record.notice) {
                metrics.observe_notice(notice.event.event_type);
                tracing::warn!(
                    webhook_id = %delivery.subscription_id,
                    notice = notice.event.event_type.as_str(),
                    event_id = %notice.event.id,
                    "webhook owner notified"
                );
            }
            return Ok(None);
        }
        Ok(Some(record))
    })
    .await
    .unwrap_or_else(|_| {
        Err(DomainError::Unavailable(
            "the attempt did not finish before its deadline".into(),
        ))
    });
    let message = match outcome {
        Ok(Some(record)) => Finished::Attempted(Box::new((delivery, record, started_at))),
        Ok(None) => Finished::Released(delivery.workspace_id, delivery.delivery_id),
        Err(err) => {
            metrics.observe_record_error();
            // With the database away, every attempt in flight ends here: once a second at most.
            static ABANDONED: crate::LogThrottle = crate::LogThrottle::new();
            if let Some(unlogged) = ABANDONED.admit() {
                tracing::warn!(
                    event_id = %delivery.event_id,
                    webhook_id = %delivery.subscription_id,
                    error = %err,
                    unlogged_since_last = unlogged,
                    "delivery attempt abandoned; its lease will expire and it will be retried"
                );
            }
            Finished::Released(delivery.workspace_id, delivery.delivery_id)
        }
    };
    // The loop outlives its tasks; if it stopped (shutdown), the lease covers the delivery.
    let _ = finished.send(message);
}

/// How long a probe (a notification this process sends itself through its pool) may take to come
/// back on the listening connection before that connection is taken for lost.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// How often a listening connection that works is proven again by a probe: a primary demoted
/// while running keeps the connection open but hears no write of the new primary's.
const PROBE_EVERY: Duration = Duration::from_secs(10);

/// Keeps a `LISTEN` connection on the primary of `url` and wakes this process's worker (the
/// announcer's [`local_wake`](DeliveryAnnouncer::local_wake)) on every delivery notification,
/// reconnecting after a second when the connection is lost, until `shutdown`.
///
/// A notification whose payload is this process's origin (its own) is ignored: the announcement
/// already woke the worker. Any other tells the announcer that another process is there
/// ([`DeliveryAnnouncer::heard_another`]). On reaching `LISTEN`, the listener sends a
/// notification of its own origin, so that the other processes notify this one from then on
/// (a process alone sends none; see the announcer).
///
/// The connection is proven, not trusted: on reaching `LISTEN` and then every 10 s, a probe
/// (`probe:<origin>:<n>`) is sent through `pool`, whose connections are the writers' own, and
/// must come back on the listening connection within 3 s. One that does not means the listener
/// is on another server than the writes (after a failover, a demoted primary that still runs) or
/// deaf: it is dropped and opened again, with `target_session_attrs=read-write`, on the primary.
/// Until a probe has come back, and whenever none can be sent (the database away), the worker's
/// poll (every 500 ms) is what finds new deliveries, so none waits longer than that.
pub async fn run_listener(
    url: String,
    pool: crate::PgPool,
    announcer: DeliveryAnnouncer,
    mut shutdown: watch::Receiver<bool>,
) {
    let url = crate::postgres::for_writes_bounded(&url);
    let wake = announcer.local_wake();
    let failures = crate::LogThrottle::new();
    let mut probes = 0_u64;
    loop {
        match listen(&url, &pool, &announcer, &mut probes, &mut shutdown).await {
            Ok(Listening::ShutDown) => return,
            Ok(Listening::Lost) => {
                tracing::warn!("delivery notification connection closed; reconnecting");
            }
            Ok(Listening::Deaf) => tracing::warn!(
                "delivery notifications: a probe sent through the pool did not come back (the \
                 listener is not on the primary); reconnecting"
            ),
            Err(err) => {
                if let Some(unlogged) = failures.admit() {
                    tracing::warn!(
                        error = %err,
                        unlogged_since_last = unlogged,
                        "delivery notifications lost; reconnecting"
                    );
                }
            }
        }
        // Whatever was announced meanwhile is picked up by the next claim.
        wake.notify_one();
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// How a listening connection ended.
enum Listening {
    /// Asked to stop.
    ShutDown,
    /// The connection closed.
    Lost,
    /// A probe sent through the pool did not come back on it.
    Deaf,
}

/// What the listening connection's driver passes on.
enum Heard {
    /// A delivery notification of another process.
    Delivery,
    /// This process's probe number `n`.
    Probe(u64),
}

async fn listen(
    url: &str,
    pool: &crate::PgPool,
    announcer: &DeliveryAnnouncer,
    probes: &mut u64,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Listening, tokio_postgres::Error> {
    let wake = announcer.local_wake();
    let own_origin = announcer.origin();
    // Named after the process: the other processes' notifiers look for it in pg_stat_activity,
    // and operators can tell the listeners apart there.
    let (client, mut connection) = url
        .parse::<tokio_postgres::Config>()?
        .application_name(announcer.listener_name())
        .connect(NoTls)
        .await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (heard, origin) = (announcer.clone(), own_origin.clone());
    let own_probe = format!("probe:{own_origin}:");
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            let passed = match message {
                Ok(AsyncMessage::Notification(note)) => {
                    let payload = note.payload();
                    if let Some(n) = payload.strip_prefix(&own_probe) {
                        n.parse().ok().map(Heard::Probe)
                    } else if payload == &*origin || payload.starts_with("probe:") {
                        // Its own announcement, or another process's probe.
                        None
                    } else {
                        heard.heard_another();
                        Some(Heard::Delivery)
                    }
                }
                Ok(_) => None,
                Err(_) => return,
            };
            if let Some(passed) = passed
                && tx.send(passed).is_err()
            {
                return;
            }
        }
    });
    // Listening, and saying so to the other processes (the origin is hexadecimal: nothing to
    // quote); this process's own listener ignores it.
    client
        .batch_execute(&format!(
            "LISTEN {DELIVERY_CHANNEL}; NOTIFY {DELIVERY_CHANNEL}, '{own_origin}'"
        ))
        .await?;
    wake.notify_one();
    // The probe in flight: its number and when it must have come back. The first goes at once.
    let mut waiting: Option<(u64, tokio::time::Instant)> = None;
    let mut next_probe = tokio::time::Instant::now();
    let ended = loop {
        let deadline = waiting.map_or(next_probe, |(_, by)| by);
        tokio::select! {
            message = rx.recv() => match message {
                Some(Heard::Delivery) => wake.notify_one(),
                Some(Heard::Probe(n)) => {
                    if waiting.is_some_and(|(sent, _)| sent == n) {
                        waiting = None;
                        next_probe = tokio::time::Instant::now() + PROBE_EVERY;
                    }
                }
                None => break Listening::Lost,
            },
            () = tokio::time::sleep_until(deadline) => {
                if waiting.is_some() {
                    break Listening::Deaf;
                }
                *probes += 1;
                if send_probe(pool, &own_origin, *probes).await {
                    waiting = Some((*probes, tokio::time::Instant::now() + PROBE_TIMEOUT));
                } else {
                    // Nothing to conclude while no probe can be sent: try again later.
                    next_probe = tokio::time::Instant::now() + PROBE_TIMEOUT;
                }
            }
            _ = shutdown.changed() => {
                driver.abort();
                return Ok(Listening::ShutDown);
            }
        }
    };
    driver.abort();
    drop(client);
    Ok(ended)
}

/// Sends probe `n` of the listener of `origin` through `pool`, committed at once; `false` when it
/// could not be sent, or when the pool's connection is read-only (not on the primary: the pools
/// are then told to check their connections, and the probe is not sent where no write goes).
async fn send_probe(pool: &crate::PgPool, origin: &str, n: u64) -> bool {
    use diesel_async::RunQueryDsl as _;
    let sent = tokio::time::timeout(PROBE_TIMEOUT, async {
        let mut conn = pool.get().await.ok()?;
        diesel::sql_query(
            "SELECT pg_notify($1, $2)::text FROM (SELECT) AS one \
             WHERE current_setting('transaction_read_only') = 'off'",
        )
        .bind::<diesel::sql_types::Text, _>(DELIVERY_CHANNEL)
        .bind::<diesel::sql_types::Text, _>(format!("probe:{origin}:{n}"))
        .execute(&mut conn)
        .await
        .ok()
    });
    match sent.await {
        Ok(Some(1)) => true,
        Ok(Some(_)) => {
            crate::postgres::read_only_seen();
            false
        }
        _ => false,
    }
}

/// How many overdue invoices one housekeeping call announces at most.
const OVERDUE_BATCH: u32 = 500;

/// Every `interval` (the first pass at once), until `shutdown`: purges rows past their retention,
/// announces the invoices that became overdue (`INVOICE_OVERDUE`, once per invoice, safe with
/// several processes doing the same), and disables the webhooks of keys that expired (the claim
/// already skips them; this makes them show `DISABLED`).
#[allow(clippy::too_many_arguments)]
pub async fn run_housekeeping(
    store: Arc<dyn Housekeeping>,
    invoices: timetrack_domain::services::InvoiceService,
    keys: timetrack_domain::services::KeyService,
    clock: Arc<dyn Clock>,
    retention: Retention,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        loop {
            match invoices.announce_overdue(OVERDUE_BATCH).await {
                Ok(0) => break,
                Ok(n) => {
                    tracing::info!(invoices = n, "housekeeping: overdue invoices announced");
                    if n < OVERDUE_BATCH as usize {
                        break;
                    }
                }
                Err(err) => {
                    tracing::warn!(error = %err, "announcing overdue invoices failed; next pass will retry");
                    break;
                }
            }
        }
        match keys.disable_webhooks_of_expired().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                webhooks = n,
                "housekeeping: webhooks of expired keys disabled"
            ),
            Err(err) => {
                tracing::warn!(error = %err, "disabling expired keys' webhooks failed; next pass will retry")
            }
        }
        match store.purge(clock.now(), retention).await {
            Ok(purged) => tracing::info!(
                events = purged.events,
                attempts = purged.attempts,
                idempotency_keys = purged.idempotency_keys,
                rate_limit_hits = purged.rate_limit_hits,
                "housekeeping: rows past retention purged"
            ),
            Err(err) => tracing::warn!(error = %err, "housekeeping failed; next pass will retry"),
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use timetrack_domain::delivery::{AttemptReport, FailureReason};
    use timetrack_domain::ids::{EventId, WorkspaceId};
    use timetrack_domain::model::EventType;

    fn delivery(webhook: &str) -> ClaimedDelivery {
        ClaimedDelivery {
            delivery_id: DeliveryId(1),
            kind: DeliveryKind::Event,
            event_id: EventId(uuid::Uuid::nil()),
            subscription_id: WebhookId::parse(webhook).unwrap(),
            workspace_id: WorkspaceId(uuid::Uuid::nil()),
            event_type: EventType::ClientCreated,
            body: "{}".into(),
            url: "https://example.com/hook".into(),
            description: None,
            secret: "whsec_x".into(),
            previous_secret: None,
            headers: Default::default(),
            attempts: 0,
            ordering_key: "c1".into(),
            sequence: 1,
            failing_since: None,
            failing_notified: false,
        }
    }

    fn record(outcome: AttemptOutcome) -> AttemptRecord {
        AttemptRecord {
            started_at: time::OffsetDateTime::UNIX_EPOCH,
            report: AttemptReport {
                outcome,
                latency: time::Duration::milliseconds(3),
                response_excerpt: None,
            },
            next: NextStep::RetryAt(time::OffsetDateTime::UNIX_EPOCH),
            disable_subscription: false,
            notice: None,
            signature: None,
            custom_headers: None,
        }
    }

    #[test]
    fn failed_attempts_are_logged_once_a_minute_per_subscription_with_the_count_between() {
        let mut log = FailureLog::default();
        let a = delivery("wh_aaaaaaaaaaaaaaaaaaaaaaaa");
        let b = delivery("wh_bbbbbbbbbbbbbbbbbbbbbbbb");
        let refused = record(AttemptOutcome::Failed {
            reason: FailureReason::Connect,
            detail: "connection refused".into(),
        });
        let rejected = record(AttemptOutcome::Rejected {
            status: 503,
            retry_after: None,
        });
        let ok = record(AttemptOutcome::Delivered { status: 200 });
        let t0 = Instant::now();
        assert_eq!(log.attempted(&a, &refused, t0), Some(0));
        assert_eq!(
            log.attempted(&a, &rejected, t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            log.attempted(&a, &refused, t0 + Duration::from_secs(59)),
            None
        );
        // Another subscription has its own allowance.
        assert_eq!(
            log.attempted(&b, &rejected, t0 + Duration::from_secs(2)),
            Some(0)
        );
        // Successes are never logged and do not count.
        assert_eq!(log.attempted(&a, &ok, t0 + Duration::from_secs(3)), None);
        assert_eq!(
            log.attempted(&a, &refused, t0 + Duration::from_secs(61)),
            Some(2)
        );
        assert_eq!(
            log.attempted(&a, &refused, t0 + Duration::from_secs(62)),
            None
        );
    }
}
