//! The delivery queue in PostgreSQL: leased claims with `FOR UPDATE SKIP LOCKED`, and outcomes
//! recorded in one transaction each.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
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

use super::{PgPool, map_db_error, map_pool_error, opaque_debug};

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

const CLAIM: &str = "\
WITH in_flight AS (
    SELECT subscription_id, count(*) AS n
    FROM deliveries
    WHERE status = 'PENDING' AND lease_expires_at > $1
    GROUP BY subscription_id
), candidates AS (
    SELECT d.event_id, d.subscription_id,
           row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.next_attempt_at) AS rank,
           coalesce(f.n, 0) AS busy
    FROM deliveries d
    JOIN webhook_subscriptions s ON s.id = d.subscription_id
    LEFT JOIN in_flight f ON f.subscription_id = d.subscription_id
    WHERE d.status = 'PENDING'
      AND d.next_attempt_at <= $1
      AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
      AND s.status = 'ACTIVE'
), due AS (
    SELECT d.event_id, d.subscription_id
    FROM deliveries d
    JOIN candidates c ON c.event_id = d.event_id AND c.subscription_id = d.subscription_id
    WHERE c.rank + c.busy <= $4
      -- Repeated here so that they are re-checked on a row another worker just leased: the
      -- CTE above was evaluated on the statement's snapshot.
      AND d.status = 'PENDING'
      AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
    ORDER BY d.next_attempt_at
    LIMIT $3
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE deliveries d
SET lease_expires_at = $2
FROM due, events e, webhook_subscriptions s
WHERE d.event_id = due.event_id AND d.subscription_id = due.subscription_id
  AND e.id = d.event_id AND s.id = d.subscription_id
RETURNING d.event_id, d.subscription_id, d.workspace_id, e.event_type, e.body, s.url, s.secret,
          d.attempts, s.failing_since";

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

/// [`DeliveryQueue`] on PostgreSQL.
#[derive(Clone)]
pub struct PgDeliveryQueue {
    pool: PgPool,
}

opaque_debug!(PgDeliveryQueue);

impl PgDeliveryQueue {
    /// The queue on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn claimed(row: ClaimRow) -> DomainResult<ClaimedDelivery> {
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
        secret: row.secret,
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
    async fn claim(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        per_subscription: u32,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<ClaimRow> = diesel::sql_query(CLAIM)
            .bind::<Timestamptz, _>(now)
            .bind::<Timestamptz, _>(lease_until)
            .bind::<BigInt, _>(i64::from(limit))
            .bind::<BigInt, _>(i64::from(per_subscription))
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "claiming deliveries"))?;
        rows.into_iter().map(claimed).collect()
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
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let finished = attempt.started_at + attempt.report.latency;
        let (code, error) = last_result(&attempt.report.outcome);
        let number = i32::try_from(claimed.attempts).unwrap_or(i32::MAX - 1) + 1;
        let latency_ms =
            i32::try_from(attempt.report.latency.whole_milliseconds()).unwrap_or(i32::MAX);
        let (status, next_at) = match attempt.next {
            NextStep::Done => ("DELIVERED", finished),
            NextStep::RetryAt(at) => ("PENDING", at),
            NextStep::GiveUp | NextStep::Unsubscribe => ("FAILED", finished),
        };
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::sql_query(
                "INSERT INTO delivery_attempts (event_id, subscription_id, attempt, started_at, \
                 latency_ms, status_code, error, response_excerpt) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (event_id, subscription_id, attempt) DO NOTHING",
            )
            .bind::<SqlUuid, _>(claimed.event_id.0)
            .bind::<Text, _>(claimed.subscription_id.as_str())
            .bind::<Integer, _>(number)
            .bind::<Timestamptz, _>(attempt.started_at)
            .bind::<Integer, _>(latency_ms)
            .bind::<Nullable<Integer>, _>(code)
            .bind::<Nullable<Text>, _>(error.as_deref())
            .bind::<Nullable<Text>, _>(attempt.report.response_excerpt.as_deref())
            .execute(conn)
            .await?;
            diesel::sql_query(
                "UPDATE deliveries SET status = $3, attempts = $4, next_attempt_at = $5, \
                 lease_expires_at = NULL, last_status_code = $6, last_error = $7, updated_at = $8 \
                 WHERE event_id = $1 AND subscription_id = $2 AND status = 'PENDING'",
            )
            .bind::<SqlUuid, _>(claimed.event_id.0)
            .bind::<Text, _>(claimed.subscription_id.as_str())
            .bind::<Text, _>(status)
            .bind::<Integer, _>(number)
            .bind::<Timestamptz, _>(next_at)
            .bind::<Nullable<Integer>, _>(code)
            .bind::<Nullable<Text>, _>(error.as_deref())
            .bind::<Timestamptz, _>(finished)
            .execute(conn)
            .await?;
            // The failure clock: cleared by a success, started by the first failure.
            if attempt.next == NextStep::Done {
                diesel::sql_query(
                    "UPDATE webhook_subscriptions SET failing_since = NULL \
                     WHERE id = $1 AND failing_since IS NOT NULL",
                )
                .bind::<Text, _>(claimed.subscription_id.as_str())
                .execute(conn)
                .await?;
            } else {
                diesel::sql_query(
                    "UPDATE webhook_subscriptions SET failing_since = $2 \
                     WHERE id = $1 AND failing_since IS NULL",
                )
                .bind::<Text, _>(claimed.subscription_id.as_str())
                .bind::<Timestamptz, _>(attempt.started_at)
                .execute(conn)
                .await?;
            }
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
