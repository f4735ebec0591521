//! The delivery queue in PostgreSQL: leased claims with `FOR UPDATE SKIP LOCKED`, and outcomes
//! recorded atomically, many to a statement, together with the next claim.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, ClaimedDelivery, NextStep, QueueStats,
};
use timetrack_domain::ids::{EventId, WorkspaceId};
use timetrack_domain::model::{EventType, WebhookId};
use timetrack_domain::ports::DeliveryQueue;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::prepared::Prepared;
use super::{PgPool, map_db_error, map_pool_error, opaque_debug};
use crate::secrets::{Purpose, SecretBox};

#[derive(Debug, QueryableByName)]
struct ClaimRow {
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
    #[diesel(sql_type = Text)]
    secret: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    failing_since: Option<OffsetDateTime>,
}

/// Records a batch of attempts (as [`RECORD_BATCH`]) and then claims due deliveries with the
/// per-subscription cap (`timetrack_claim_deliveries`) in one transaction, so the claim sees the
/// slots the record freed: `functions/record_and_claim.sql`.
const RECORD_AND_CLAIM: &str = "SELECT * FROM timetrack_record_and_claim($1, $2, $3, $4, $5, $6, \
                                $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";

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

/// Pending deliveries of active subscriptions by state (those a claim would consider).
const STATS: &str = "\
SELECT count(*) FILTER (WHERE d.next_attempt_at <= $1
                          AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)) AS due,
       count(*) FILTER (WHERE d.next_attempt_at > $1
                          AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)) AS scheduled,
       count(*) FILTER (WHERE d.lease_expires_at > $1) AS in_flight,
       min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= $1
                          AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)) AS oldest_due
FROM deliveries d
JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.status = 'ACTIVE'
WHERE d.status = 'PENDING'";

/// `$query` with the arrays of the [`RecordBatch`] `$batch` bound as its next twelve parameters
/// (diesel's `bind` is a method of each query type, not of a trait, so a function could not take
/// a query already bound).
macro_rules! bind_batch {
    ($query:expr, $batch:expr) => {
        $query
            .bind::<Array<SqlUuid>, _>(&$batch.event_ids)
            .bind::<Array<Text>, _>(&$batch.subscription_ids)
            .bind::<Array<Integer>, _>(&$batch.attempts)
            .bind::<Array<Timestamptz>, _>(&$batch.started)
            .bind::<Array<Integer>, _>(&$batch.latency_ms)
            .bind::<Array<Nullable<Integer>>, _>(&$batch.codes)
            .bind::<Array<Nullable<Text>>, _>(&$batch.errors)
            .bind::<Array<Nullable<Text>>, _>(&$batch.excerpts)
            .bind::<Array<Text>, _>(&$batch.statuses)
            .bind::<Array<Timestamptz>, _>(&$batch.next_at)
            .bind::<Array<Timestamptz>, _>(&$batch.finished)
            .bind::<Array<Bool>, _>(&$batch.done)
    };
}

/// The attempts of a batch, one array per column, for [`RECORD_BATCH`].
#[derive(Default)]
struct RecordBatch {
    event_ids: Vec<Uuid>,
    subscription_ids: Vec<String>,
    attempts: Vec<i32>,
    started: Vec<OffsetDateTime>,
    latency_ms: Vec<i32>,
    codes: Vec<Option<i32>>,
    errors: Vec<Option<String>>,
    excerpts: Vec<Option<String>>,
    statuses: Vec<&'static str>,
    next_at: Vec<OffsetDateTime>,
    finished: Vec<OffsetDateTime>,
    done: Vec<bool>,
}

impl RecordBatch {
    /// Adds the columns of `attempt`, the next attempt of `claimed`.
    fn push(&mut self, claimed: &ClaimedDelivery, attempt: &AttemptRecord) {
        let finished = attempt.finished_at();
        let (code, error) = last_result(&attempt.report.outcome);
        let (status, next_at) = match attempt.next {
            NextStep::Done => ("DELIVERED", finished),
            NextStep::RetryAt(at) => ("PENDING", at),
            NextStep::GiveUp | NextStep::Unsubscribe => ("FAILED", finished),
        };
        self.event_ids.push(claimed.event_id.0);
        self.subscription_ids
            .push(claimed.subscription_id.as_str().to_owned());
        self.attempts
            .push(i32::try_from(claimed.attempts).unwrap_or(i32::MAX - 1) + 1);
        self.started.push(attempt.started_at);
        self.latency_ms
            .push(i32::try_from(attempt.report.latency.whole_milliseconds()).unwrap_or(i32::MAX));
        self.codes.push(code);
        self.errors.push(error);
        self.excerpts.push(attempt.report.response_excerpt.clone());
        self.statuses.push(status);
        self.next_at.push(next_at);
        self.finished.push(finished);
        self.done.push(attempt.next == NextStep::Done);
    }

    /// Writes the batch with [`RECORD_BATCH`] on `conn`.
    async fn write(&self, conn: &mut AsyncPgConnection) -> QueryResult<usize> {
        Prepared(bind_batch!(diesel::sql_query(RECORD_BATCH), self))
            .execute(conn)
            .await
    }
}

/// Attempts that neither end nor disable their subscription, many per statement: the attempt
/// rows, the deliveries' new states (unless cancelled meanwhile), and each subscription's
/// failure clock, decided by its latest attempt of the batch (cleared by a success, started by a
/// failure). The statement is a function (`functions/record_attempts.sql`), whose plan the
/// server keeps per connection.
const RECORD_BATCH: &str =
    "SELECT timetrack_record_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

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
    Ok(ClaimedDelivery {
        event_id: EventId(row.event_id),
        subscription_id: WebhookId::parse(&row.subscription_id)
            .ok_or_else(|| bad("subscription id"))?,
        workspace_id: WorkspaceId(row.workspace_id),
        event_type: EventType::parse(&row.event_type).ok_or_else(|| bad("event type"))?,
        body: row.body,
        url: row.url,
        secret: secrets
            .open(Purpose::WebhookSecret, &row.secret)
            .map_err(DomainError::Unexpected)?,
        attempts: u32::try_from(row.attempts).unwrap_or(0),
        failing_since: row.failing_since,
    })
}

/// The status code and error text an outcome leaves on the delivery.
fn last_result(outcome: &AttemptOutcome) -> (Option<i32>, Option<String>) {
    match outcome {
        AttemptOutcome::Delivered { status } => (Some(i32::from(*status)), None),
        AttemptOutcome::Rejected { status, .. } => {
            (Some(i32::from(*status)), Some(format!("HTTP {status}")))
        }
        AttemptOutcome::Failed { reason, detail } => {
            (None, Some(format!("{}: {detail}", reason.as_str())))
        }
    }
}

async fn end_subscription(
    conn: &mut AsyncPgConnection,
    claimed: &ClaimedDelivery,
    status: &str,
    action: &str,
    reason: &str,
    at: OffsetDateTime,
) -> QueryResult<()> {
    let ended = diesel::sql_query(
        "UPDATE webhook_subscriptions SET status = $2, updated_at = $3 \
         WHERE id = $1 AND status = 'ACTIVE'",
    )
    .bind::<Text, _>(claimed.subscription_id.as_str())
    .bind::<Text, _>(status)
    .bind::<Timestamptz, _>(at)
    .execute(conn)
    .await?;
    if ended == 0 {
        return Ok(());
    }
    diesel::sql_query(
        "UPDATE deliveries SET status = 'CANCELLED', lease_expires_at = NULL, updated_at = $2 \
         WHERE subscription_id = $1 AND status = 'PENDING'",
    )
    .bind::<Text, _>(claimed.subscription_id.as_str())
    .bind::<Timestamptz, _>(at)
    .execute(conn)
    .await?;
    diesel::sql_query(
        "INSERT INTO audit_log (workspace_id, actor_user_id, action, target_type, target_id, \
         reason, created_at) VALUES ($1, NULL, $2, 'webhook', $3, $4, $5)",
    )
    .bind::<SqlUuid, _>(claimed.workspace_id.0)
    .bind::<Text, _>(action)
    .bind::<Text, _>(claimed.subscription_id.as_str())
    .bind::<Text, _>(reason)
    .bind::<Timestamptz, _>(at)
    .execute(conn)
    .await?;
    Ok(())
}

#[async_trait]
impl DeliveryQueue for PgDeliveryQueue {
    async fn record_and_claim(
        &self,
        attempts: &[(ClaimedDelivery, AttemptRecord)],
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        per_subscription: u32,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        if let Some((claimed, _)) = attempts.iter().find(|(_, a)| a.ends_subscription()) {
            return Err(DomainError::Unexpected(anyhow::anyhow!(
                "the attempt on {} ends its subscription and must be recorded on its own",
                claimed.subscription_id.as_str()
            )));
        }
        let mut batch = RecordBatch::default();
        for (claimed, attempt) in attempts {
            batch.push(claimed, attempt);
        }
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<ClaimRow> = Prepared(
            bind_batch!(diesel::sql_query(RECORD_AND_CLAIM), batch)
                .bind::<Timestamptz, _>(now)
                .bind::<Timestamptz, _>(lease_until)
                .bind::<BigInt, _>(i64::from(limit))
                .bind::<BigInt, _>(i64::from(per_subscription)),
        )
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "recording attempts and claiming deliveries"))?;
        rows.into_iter()
            .map(|row| claimed(row, &self.secrets))
            .collect()
    }

    async fn stats(&self, now: OffsetDateTime) -> DomainResult<QueueStats> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row: StatsRow = diesel::sql_query(STATS)
            .bind::<Timestamptz, _>(now)
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

    async fn record(&self, claimed: &ClaimedDelivery, attempt: &AttemptRecord) -> DomainResult<()> {
        let finished = attempt.finished_at();
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // The batch statement's writes, then the subscription's end, in one transaction.
        let mut batch = RecordBatch::default();
        batch.push(claimed, attempt);
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            batch.write(conn).await?;
            if attempt.next == NextStep::Unsubscribe {
                end_subscription(
                    conn,
                    claimed,
                    "DELETED",
                    "webhook.deleted",
                    "410 Gone from the receiver",
                    finished,
                )
                .await?;
            } else if attempt.disable_subscription {
                end_subscription(
                    conn,
                    claimed,
                    "DISABLED",
                    "webhook.disabled",
                    "deliveries failing for 5 days",
                    finished,
                )
                .await?;
            }
            Ok(())
        })
        .await
        .map_err(|e| map_db_error(e, "recording a delivery attempt"))
    }
}
