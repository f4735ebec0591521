//! The delivery queue in PostgreSQL: leased claims with `FOR UPDATE SKIP LOCKED`, and outcomes
//! recorded atomically, many to a statement, together with the next claim.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::delivery::streak::{self, Round, Streak, StreakChange};
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, ClaimWhen, ClaimedDelivery, InFlightCaps, NextStep, Notice,
    QueueStats, ResponseExcerpt,
};
use timetrack_domain::ids::{EventId, WorkspaceId};
use timetrack_domain::model::{CustomHeaders, DeliveryId, DeliveryKind, EventType, WebhookId};
use timetrack_domain::ports::DeliveryQueue;
use timetrack_domain::timefmt::rfc3339;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::{map_db_error, map_pool_error};
use super::outbox::Queued;
use super::pool::{PgPool, opaque_debug};
use super::prepared::Prepared;
use super::schema::{audit_log, deliveries, delivery_leases, webhook_subscriptions};
use super::sql::named_query;
use crate::secrets::{Purpose, SecretBox};

#[derive(Debug, QueryableByName)]
struct ClaimRow {
    #[diesel(sql_type = BigInt)]
    delivery_id: i64,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = SqlUuid)]
    event_id: Uuid,
    #[diesel(sql_type = Text)]
    subscription_id: String,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Text)]
    event_type: String,
    #[diesel(sql_type = Text)]
    body: String,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Nullable<Text>)]
    description: Option<String>,
    #[diesel(sql_type = Text)]
    secret: String,
    #[diesel(sql_type = Nullable<Text>)]
    previous_secret: Option<String>,
    /// The subscription's custom headers, sealed; NULL for none.
    #[diesel(sql_type = Nullable<Text>)]
    headers: Option<String>,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    failing_since: Option<OffsetDateTime>,
    #[diesel(sql_type = Bool)]
    failing_notified: bool,
    #[diesel(sql_type = Text)]
    ordering_key: String,
    #[diesel(sql_type = BigInt)]
    sequence: i64,
}

#[derive(Debug, QueryableByName)]
struct StatsRow {
    #[diesel(sql_type = BigInt)]
    due: i64,
    #[diesel(sql_type = BigInt)]
    scheduled: i64,
    #[diesel(sql_type = BigInt)]
    in_flight: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    oldest_due: Option<OffsetDateTime>,
}

/// A stored streak, locked, as `functions/lock_streaks.sql` returns it.
#[derive(Debug, QueryableByName)]
struct StreakRow {
    #[diesel(sql_type = Text)]
    subscription_id: String,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    failing_since: Option<OffsetDateTime>,
    #[diesel(sql_type = Integer)]
    failing_attempts: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    recovered_at: Option<OffsetDateTime>,
}

impl StreakRow {
    fn streak(&self) -> Streak {
        Streak {
            failing_since: self.failing_since,
            failures: u32::try_from(self.failing_attempts).unwrap_or(0),
            back_since: self.recovered_at,
        }
    }
}

/// [`named_query!`] of a statement taking the arrays of the [`RecordBatch`] `$batch` (as
/// `delivery_ids`, `subscription_ids`, ... `not_before`, `lossy`), then the parameters that follow the `;`.
macro_rules! batch_query {
    ($sql:expr, $batch:expr; $($rest:tt)*) => {
        named_query!(
            $sql;
            delivery_ids: Array<BigInt> = &$batch.delivery_ids,
            subscription_ids: Array<Text> = &$batch.subscription_ids,
            attempts: Array<Integer> = &$batch.attempts,
            started: Array<Timestamptz> = &$batch.started,
            latency_ms: Array<Integer> = &$batch.latency_ms,
            codes: Array<Nullable<Integer>> = &$batch.codes,
            errors: Array<Nullable<Text>> = &$batch.errors,
            excerpts: Array<Nullable<Text>> = &$batch.excerpts,
            statuses: Array<Text> = &$batch.statuses,
            next_at: Array<Timestamptz> = &$batch.next_at,
            finished: Array<Timestamptz> = &$batch.finished,
            done: Array<Bool> = &$batch.done,
            tests: Array<Bool> = &$batch.tests,
            workspace_ids: Array<SqlUuid> = &$batch.workspace_ids,
            not_before: Array<Nullable<Timestamptz>> = &$batch.not_before,
            lossy: Array<Bool> = &$batch.lossy,
            signatures: Array<Nullable<Text>> = &$batch.signatures,
            custom_headers: Array<Nullable<Text>> = &$batch.custom_headers,
            $($rest)*
        )
    };
}

/// The claim's parameters, as the statements that end a round with a claim take them.
struct ClaimArgs {
    now: OffsetDateTime,
    lease_until: OffsetDateTime,
    limit: i64,
    per_subscription: i64,
    per_workspace: i64,
    held_workspaces: Vec<Uuid>,
    held_counts: Vec<i32>,
    unshared: Vec<Uuid>,
    always: bool,
}

impl ClaimArgs {
    fn new(
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        caps: &InFlightCaps,
        when: ClaimWhen,
    ) -> Self {
        let (held_workspaces, held_counts) = caps
            .held
            .iter()
            .map(|(ws, n)| (ws.0, i32::try_from(*n).unwrap_or(i32::MAX)))
            .unzip();
        Self {
            now,
            lease_until,
            limit: i64::from(limit),
            per_subscription: i64::from(caps.per_subscription),
            per_workspace: i64::from(caps.per_workspace),
            held_workspaces,
            held_counts,
            unshared: caps.unshared.iter().map(|ws| ws.0).collect(),
            always: when == ClaimWhen::Always,
        }
    }
}

/// `$query!($sql, $data; ...)` (a [`batch_query!`] or a [`streak_query!`]) with the claim's
/// parameters of the [`ClaimArgs`] `$claim` added (as `now`, `lease_until`, ... `always`),
/// prepared.
macro_rules! with_claim {
    ($query:ident!($sql:expr, $data:expr; $($extra:tt)*), $claim:expr) => {
        Prepared($query!(
            $sql, $data;
            $($extra)*
            now: Timestamptz = $claim.now,
            lease_until: Timestamptz = $claim.lease_until,
            limit: BigInt = $claim.limit,
            per_subscription: BigInt = $claim.per_subscription,
            per_workspace: BigInt = $claim.per_workspace,
            held_workspaces: Array<SqlUuid> = &$claim.held_workspaces,
            held_counts: Array<Integer> = &$claim.held_counts,
            unshared: Array<SqlUuid> = &$claim.unshared,
            always: Bool = $claim.always,
        ))
    };
}

/// The streak changes of a round, one array per column, as `statements/apply_streaks.sql` and
/// `statements/apply_and_claim.sql` take them.
#[derive(Default)]
struct StreakChanges {
    subscription_ids: Vec<String>,
    starts: Vec<Option<OffsetDateTime>>,
    failures: Vec<i32>,
    forget_told: Vec<bool>,
    back_since: Vec<Option<OffsetDateTime>>,
    due_at: Vec<Option<OffsetDateTime>>,
}

impl StreakChanges {
    /// What `rounds` change in the `stored` streaks (those the recording locked and returned),
    /// as the domain decides it.
    fn decide(rounds: &[(&WebhookId, Round)], stored: &[StreakRow]) -> Self {
        let mut changes = Self::default();
        for row in stored {
            let Some((_, round)) = rounds
                .iter()
                .find(|(id, _)| id.as_str() == row.subscription_id)
            else {
                continue;
            };
            if let Some(change) = streak::after_round(&row.streak(), round) {
                changes.push(&row.subscription_id, &change);
            }
        }
        changes
    }

    fn push(&mut self, subscription_id: &str, change: &StreakChange) {
        self.subscription_ids.push(subscription_id.to_owned());
        self.starts.push(change.failing_since);
        self.failures
            .push(i32::try_from(change.failures).unwrap_or(i32::MAX));
        self.forget_told.push(change.forget_told);
        self.back_since
            .push(change.bring_forward.map(|b| b.back_since));
        self.due_at.push(change.bring_forward.map(|b| b.due_at));
    }
}

/// [`named_query!`] of a statement taking the arrays of the [`StreakChanges`] `$changes` (as
/// `subscription_ids`, `streak_starts`, ... `bring_limit`), then the parameters after the `;`.
macro_rules! streak_query {
    ($sql:expr, $changes:expr; $($rest:tt)*) => {
        named_query!(
            $sql;
            subscription_ids: Array<Text> = &$changes.subscription_ids,
            streak_starts: Array<Nullable<Timestamptz>> = &$changes.starts,
            streak_failures: Array<Integer> = &$changes.failures,
            forget_told: Array<Bool> = &$changes.forget_told,
            back_since: Array<Nullable<Timestamptz>> = &$changes.back_since,
            due_at: Array<Nullable<Timestamptz>> = &$changes.due_at,
            bring_limit: Integer = BRING_LIMIT,
            $($rest)*
        )
    };
}

/// Whether, as far as the claims of `attempts` showed, their round changes no streak (so it is
/// recorded and the next claim made in one statement): see [`Round::changes_nothing_for`]. The
/// claim shows whether a subscription was failing; the statement checks the rest.
fn changes_no_streak(
    rounds: &[(&WebhookId, Round)],
    attempts: &[(ClaimedDelivery, AttemptRecord)],
) -> bool {
    rounds.iter().all(|(id, round)| {
        let shown = Streak {
            failing_since: attempts
                .iter()
                .find_map(|(c, _)| (&c.subscription_id == *id).then_some(c.failing_since))
                .flatten(),
            ..Streak::default()
        };
        round.changes_nothing_for(&shown)
    })
}

/// [`streak::BRING_FORWARD_PER_ROUND`] as the statements take it.
#[allow(clippy::cast_possible_wrap)]
const BRING_LIMIT: i32 = streak::BRING_FORWARD_PER_ROUND as i32;

/// The message of `functions/record_and_claim.sql` when its round has a streak to decide.
const STREAK_TO_DECIDE: &str = "timetrack: a streak to decide";

/// How many times a recording transaction PostgreSQL aborted to break a deadlock is run again.
/// Aborted, it did nothing, so running it again is safe; without it, the attempt's delivery would
/// wait for its lease to expire and be sent again. Waits that could close a cycle are avoided
/// (the streak locks are taken in the order of the subscriptions' ids, after the delivery rows,
/// and bringing retries forward skips rows another transaction holds); this covers the rest.
const DEADLOCK_RETRIES: u32 = 2;

fn is_deadlock(error: &diesel::result::Error) -> bool {
    matches!(
        error,
        diesel::result::Error::DatabaseError(_, info) if info.message().starts_with("deadlock detected")
    )
}

fn is_streak_to_decide(error: &diesel::result::Error) -> bool {
    matches!(
        error,
        diesel::result::Error::DatabaseError(_, info) if info.message() == STREAK_TO_DECIDE
    )
}

/// The attempts of a batch, one array per column, as `statements/record_round.sql` and
/// `statements/record_and_claim.sql` take them.
#[derive(Default)]
struct RecordBatch {
    delivery_ids: Vec<i64>,
    subscription_ids: Vec<String>,
    attempts: Vec<i32>,
    started: Vec<OffsetDateTime>,
    latency_ms: Vec<i32>,
    codes: Vec<Option<i32>>,
    errors: Vec<Option<String>>,
    excerpts: Vec<Option<String>>,
    /// Whether each excerpt is lossy (the body was not UTF-8 text).
    lossy: Vec<bool>,
    statuses: Vec<&'static str>,
    next_at: Vec<OffsetDateTime>,
    finished: Vec<OffsetDateTime>,
    done: Vec<bool>,
    tests: Vec<bool>,
    workspace_ids: Vec<Uuid>,
    /// A retry's time when the receiver asked for the wait (`Retry-After`): it is not brought
    /// forward before it.
    not_before: Vec<Option<OffsetDateTime>>,
    /// The `webhook-signature` header each attempt was sent with.
    signatures: Vec<Option<String>>,
    /// The custom headers each attempt was sent with, masked.
    custom_headers: Vec<Option<String>>,
}

impl RecordBatch {
    /// Adds the columns of `attempt`, the next attempt of `claimed`.
    fn push(&mut self, claimed: &ClaimedDelivery, attempt: &AttemptRecord) {
        let finished = attempt.finished_at();
        let (code, error) = attempt.last_result();
        let (status, next_at) = match attempt.next {
            NextStep::Done => ("DELIVERED", finished),
            NextStep::RetryAt(at) => ("PENDING", at),
            NextStep::GiveUp | NextStep::Unsubscribe => ("FAILED", finished),
        };
        self.delivery_ids.push(claimed.delivery_id.0);
        self.subscription_ids
            .push(claimed.subscription_id.as_str().to_owned());
        self.attempts
            .push(i32::try_from(claimed.attempts).unwrap_or(i32::MAX - 1) + 1);
        self.started.push(attempt.started_at);
        self.latency_ms
            .push(i32::try_from(attempt.report.latency.whole_milliseconds()).unwrap_or(i32::MAX));
        self.codes.push(code);
        self.errors.push(error);
        let excerpt = attempt.report.response_excerpt.as_ref();
        self.excerpts.push(excerpt.map(|e| e.text().to_owned()));
        self.lossy
            .push(excerpt.is_some_and(ResponseExcerpt::is_lossy));
        self.statuses.push(status);
        self.next_at.push(next_at);
        self.finished.push(finished);
        self.done.push(attempt.next == NextStep::Done);
        self.tests.push(claimed.kind == DeliveryKind::Test);
        self.workspace_ids.push(claimed.workspace_id.0);
        let asked_to_wait = matches!(
            attempt.report.outcome,
            AttemptOutcome::Rejected {
                retry_after: Some(_),
                ..
            }
        );
        self.not_before.push(match attempt.next {
            NextStep::RetryAt(at) if asked_to_wait => Some(at),
            _ => None,
        });
        self.signatures.push(attempt.signature.clone());
        self.custom_headers.push(attempt.custom_headers.clone());
    }

    /// Writes the batch on `conn`: attempts that neither end nor disable their subscription,
    /// many per statement: the attempt rows, the deliveries' new states (unless cancelled
    /// meanwhile), their leases freed. Returns the stored streaks the round may change, locked
    /// until the transaction ends. The statement calls a function
    /// (`functions/record_round.sql`).
    async fn write(&self, conn: &mut AsyncPgConnection) -> QueryResult<Vec<StreakRow>> {
        Prepared(batch_query!(include_str!("statements/record_round.sql"), self;))
            .load(conn)
            .await
    }
}

/// [`DeliveryQueue`] on PostgreSQL.
#[derive(Clone)]
pub struct PgDeliveryQueue {
    pool: PgPool,
    secrets: SecretBox,
}

opaque_debug!(PgDeliveryQueue);

impl PgDeliveryQueue {
    /// The queue on `pool`; claimed deliveries' signing secrets are opened with `secrets`.
    pub fn new(pool: PgPool, secrets: SecretBox) -> Self {
        Self { pool, secrets }
    }
}

fn claimed(row: ClaimRow, secrets: &SecretBox) -> DomainResult<ClaimedDelivery> {
    let bad = |what: &str| {
        DomainError::Unexpected(anyhow::anyhow!("claimed delivery has an invalid {what}"))
    };
    let secret = |sealed: &str| {
        secrets
            .open(Purpose::WebhookSecret, sealed)
            .map_err(DomainError::Unexpected)
    };
    Ok(ClaimedDelivery {
        delivery_id: DeliveryId(row.delivery_id),
        kind: DeliveryKind::parse(&row.kind).ok_or_else(|| bad("kind"))?,
        event_id: EventId(row.event_id),
        subscription_id: WebhookId::parse(&row.subscription_id)
            .ok_or_else(|| bad("subscription id"))?,
        workspace_id: WorkspaceId(row.workspace_id),
        event_type: EventType::parse(&row.event_type).ok_or_else(|| bad("event type"))?,
        body: row.body,
        url: row.url,
        description: row.description,
        secret: secret(&row.secret)?,
        previous_secret: row.previous_secret.as_deref().map(secret).transpose()?,
        headers: row
            .headers
            .as_deref()
            .map(|sealed| {
                secrets
                    .open(Purpose::WebhookHeaders, sealed)
                    .map_err(DomainError::Unexpected)
                    .and_then(|plain| CustomHeaders::from_stored(&plain))
            })
            .transpose()?
            .unwrap_or_default(),
        attempts: u32::try_from(row.attempts).unwrap_or(0),
        failing_since: row.failing_since,
        failing_notified: row.failing_notified,
        ordering_key: row.ordering_key,
        sequence: row.sequence,
    })
}

/// Writes `notice` (`statements/notice.sql`) on `conn`; returns the deliveries it queued.
async fn write_notice(conn: &mut AsyncPgConnection, notice: &Notice) -> QueryResult<i64> {
    let event = &notice.event;
    named_query!(
        include_str!("statements/notice.sql");
        id: SqlUuid = event.id.0,
        workspace_id: SqlUuid = event.workspace_id.0,
        event_type: Text = event.event_type.as_str(),
        body: Text = &event.body,
        at: Timestamptz = event.created_at,
        about: Text = notice.about.as_str(),
    )
    .get_result::<Queued>(conn)
    .await
    .map(|row| row.queued)
}

/// Marks the owner of `claimed`'s subscription told, at `at`, of its failure streak, if they
/// were not told of it yet and the streak as it stands now started by `started_by` (a success
/// recorded since the claim ended the streak the claim saw): whether it did, so that
/// `WEBHOOK_FAILING` is written once per streak.
async fn tell(
    conn: &mut AsyncPgConnection,
    claimed: &ClaimedDelivery,
    at: OffsetDateTime,
    started_by: OffsetDateTime,
) -> QueryResult<bool> {
    let told = diesel::update(
        webhook_subscriptions::table
            .filter(webhook_subscriptions::id.eq(claimed.subscription_id.as_str()))
            .filter(webhook_subscriptions::status.eq("ACTIVE"))
            .filter(webhook_subscriptions::failing_notified_at.is_null())
            .filter(webhook_subscriptions::failing_since.le(started_by)),
    )
    .set(webhook_subscriptions::failing_notified_at.eq(at))
    .execute(conn)
    .await?;
    Ok(told == 1)
}

/// Forgets that the owner of `claimed`'s subscription was told of its failure streak, if they
/// were: whether they were, so that `WEBHOOK_RECOVERED` is written once per told streak.
async fn forget_told(conn: &mut AsyncPgConnection, claimed: &ClaimedDelivery) -> QueryResult<bool> {
    let forgotten = diesel::update(
        webhook_subscriptions::table
            .filter(webhook_subscriptions::id.eq(claimed.subscription_id.as_str()))
            .filter(webhook_subscriptions::status.eq("ACTIVE"))
            .filter(webhook_subscriptions::failing_notified_at.is_not_null()),
    )
    .set(webhook_subscriptions::failing_notified_at.eq(None::<OffsetDateTime>))
    .execute(conn)
    .await?;
    Ok(forgotten == 1)
}

/// Cancels what is queued for a subscription that ends (deleted, disabled, gone at the
/// receiver), and frees the leases of those in flight: none of them is sent or counted again.
pub(super) async fn cancel_queued(
    conn: &mut AsyncPgConnection,
    subscription_id: &str,
    at: OffsetDateTime,
) -> QueryResult<()> {
    diesel::update(
        deliveries::table
            .filter(deliveries::subscription_id.eq(subscription_id))
            .filter(deliveries::status.eq("PENDING")),
    )
    .set((
        deliveries::status.eq("CANCELLED"),
        deliveries::updated_at.eq(at),
    ))
    .execute(conn)
    .await?;
    diesel::delete(
        delivery_leases::table.filter(delivery_leases::subscription_id.eq(subscription_id)),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends `claimed`'s subscription if it is still active; whether it did.
async fn end_subscription(
    conn: &mut AsyncPgConnection,
    claimed: &ClaimedDelivery,
    status: &str,
    action: &str,
    reason: &str,
    at: OffsetDateTime,
) -> QueryResult<bool> {
    let ended = diesel::update(
        webhook_subscriptions::table
            .filter(webhook_subscriptions::id.eq(claimed.subscription_id.as_str()))
            .filter(webhook_subscriptions::status.eq("ACTIVE")),
    )
    .set((
        webhook_subscriptions::status.eq(status),
        // Disabled by the worker only for failing (`docs/decisions.md`, Pausing a webhook).
        webhook_subscriptions::disabled_reason.eq((status == "DISABLED").then_some("failing")),
        webhook_subscriptions::updated_at.eq(at),
    ))
    .execute(conn)
    .await?;
    if ended == 0 {
        return Ok(false);
    }
    cancel_queued(conn, claimed.subscription_id.as_str(), at).await?;
    diesel::insert_into(audit_log::table)
        .values((
            audit_log::workspace_id.eq(claimed.workspace_id.0),
            audit_log::actor_user_id.eq(None::<Uuid>),
            audit_log::action.eq(action),
            audit_log::target_type.eq("webhook"),
            audit_log::target_id.eq(claimed.subscription_id.as_str()),
            audit_log::reason.eq(reason),
            audit_log::created_at.eq(at),
        ))
        .execute(conn)
        .await?;
    Ok(true)
}

#[async_trait]
impl DeliveryQueue for PgDeliveryQueue {
    async fn record_and_claim(
        &self,
        attempts: &[(ClaimedDelivery, AttemptRecord)],
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        caps: &InFlightCaps,
        when: ClaimWhen,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        timetrack_domain::delivery::none_recorded_alone(attempts)?;
        let mut batch = RecordBatch::default();
        for (claimed, attempt) in attempts {
            batch.push(claimed, attempt);
        }
        let rounds = streak::rounds_of(attempts.iter().map(|(c, a)| (c, a)));
        let claim = ClaimArgs::new(now, lease_until, limit, caps, when);
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // The usual round, one statement: every attempt succeeded and no streak changes.
        let usual = if changes_no_streak(&rounds, attempts) {
            match with_claim!(
                batch_query!(include_str!("statements/record_and_claim.sql"), batch;),
                claim
            )
            .load::<ClaimRow>(&mut conn)
            .await
            {
                Err(e) if is_streak_to_decide(&e) => None,
                other => Some(other),
            }
        } else {
            None
        };
        // Otherwise: record and lock the streaks, let the domain decide, apply and claim, in
        // one transaction.
        let rows = match usual {
            Some(rows) => rows,
            None => {
                let recorded = batch.subscription_ids.clone();
                let mut deadlocks = 0;
                loop {
                    let result = conn
                        .transaction::<_, diesel::result::Error, _>(async |conn| {
                            let stored = batch.write(conn).await?;
                            let changes = StreakChanges::decide(&rounds, &stored);
                            with_claim!(
                                streak_query!(
                                    include_str!("statements/apply_and_claim.sql"), changes;
                                    recorded: Array<Text> = &recorded,
                                ),
                                claim
                            )
                            .load::<ClaimRow>(conn)
                            .await
                        })
                        .await;
                    match result {
                        Err(e) if is_deadlock(&e) && deadlocks < DEADLOCK_RETRIES => {
                            deadlocks += 1;
                        }
                        other => break other,
                    }
                }
            }
        }
        .map_err(|e| map_db_error(e, "recording attempts and claiming deliveries"))?;
        // A row that cannot be made a delivery (a secret that does not open) is that delivery's
        // fault alone: it is logged and left to its lease, and the others go out.
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let delivery_id = row.delivery_id;
                claimed(row, &self.secrets)
                    .inspect_err(|error| {
                        tracing::error!(
                            delivery_id,
                            %error,
                            "a claimed delivery cannot be sent; left to its lease"
                        );
                    })
                    .ok()
            })
            .collect())
    }

    async fn stats(&self, now: OffsetDateTime) -> DomainResult<QueueStats> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row: StatsRow = named_query!(
            include_str!("statements/queue_stats.sql");
            now: Timestamptz = now,
        )
        .get_result(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading queue statistics"))?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(QueueStats {
            due: count(row.due),
            scheduled: count(row.scheduled),
            in_flight: count(row.in_flight),
            oldest_due_age: row.oldest_due.map_or(time::Duration::ZERO, |at| {
                (now - at).max(time::Duration::ZERO)
            }),
        })
    }

    async fn record(
        &self,
        claimed: &ClaimedDelivery,
        attempt: &AttemptRecord,
    ) -> DomainResult<bool> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // The batch statement's writes, then the subscription's end and the notice, in one
        // transaction.
        let mut batch = RecordBatch::default();
        batch.push(claimed, attempt);
        let mut deadlocks = 0;
        loop {
            let result = self.record_in(&mut conn, claimed, attempt, &batch).await;
            match result {
                Err(e) if is_deadlock(&e) && deadlocks < DEADLOCK_RETRIES => deadlocks += 1,
                other => break other,
            }
        }
        .map_err(|e| map_db_error(e, "recording a delivery attempt"))
    }
}

impl PgDeliveryQueue {
    /// [`DeliveryQueue::record`]'s transaction on `conn`, `batch` holding the attempt.
    async fn record_in(
        &self,
        conn: &mut AsyncPgConnection,
        claimed: &ClaimedDelivery,
        attempt: &AttemptRecord,
        batch: &RecordBatch,
    ) -> QueryResult<bool> {
        let finished = attempt.finished_at();
        let recovery = attempt
            .notice
            .as_ref()
            .is_some_and(|n| n.event.event_type == EventType::WebhookRecovered);
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            // A recovery is decided before the batch's write, which ends the streak and forgets
            // what was told of it.
            let recovered = recovery && forget_told(conn, claimed).await?;
            let stored = batch.write(conn).await?;
            let changes = StreakChanges::decide(&streak::rounds_of([(claimed, attempt)]), &stored);
            if !changes.subscription_ids.is_empty() {
                Prepared(streak_query!(include_str!("statements/apply_streaks.sql"), changes;))
                    .execute(conn)
                    .await?;
            }
            let changed = if attempt.next == NextStep::Unsubscribe {
                end_subscription(
                    conn,
                    claimed,
                    "DELETED",
                    "webhook.deleted",
                    "410 Gone from the receiver",
                    finished,
                )
                .await?
            } else if attempt.disable_subscription {
                let since = claimed.failing_since.unwrap_or(attempt.started_at);
                end_subscription(
                    conn,
                    claimed,
                    "DISABLED",
                    "webhook.disabled",
                    &format!("every delivery failing since {}", rfc3339(since)),
                    finished,
                )
                .await?
            } else {
                match &attempt.notice {
                    Some(notice) if notice.event.event_type == EventType::WebhookFailing => {
                        let started_by = notice.streak_started_by.unwrap_or(finished);
                        tell(conn, claimed, finished, started_by).await?
                    }
                    _ => recovered,
                }
            };
            match &attempt.notice {
                Some(notice) if changed => {
                    write_notice(conn, notice).await?;
                    Ok(true)
                }
                _ => Ok(false),
            }
        })
        .await
    }
}
