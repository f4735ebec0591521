//! A subscription's delivery log, and the deliveries its owner asks for (a test, a resend, a
//! replay), in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{EventId, UserId, WorkspaceId};
use timetrack_domain::model::{
    DeliveryAttempt, DeliveryDetail, DeliveryId, DeliveryKind, DeliveryQuery, DeliveryRecord,
    DeliveryStatus, Event, EventType, ReplayOutcome, ReplayWindow, WebhookId,
};
use timetrack_domain::ports::DeliveryLog;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::announce::DeliveryAnnouncer;
use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::schema::{api_keys, deliveries, delivery_attempts, events, webhook_subscriptions};
use super::sql::named_query;

/// A row of `statements/delivery_log.sql`.
#[derive(QueryableByName)]
struct LogRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = SqlUuid)]
    event_id: Uuid,
    #[diesel(sql_type = Text)]
    event_type: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    next_attempt_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_attempt_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Integer>)]
    last_status_code: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    updated_at: OffsetDateTime,
    #[diesel(sql_type = Text)]
    body: String,
    /// What the claim gives the sender as `webhook-ordering-key` and `webhook-sequence`.
    #[diesel(sql_type = Text)]
    ordering_key: String,
    #[diesel(sql_type = BigInt)]
    sequence: i64,
}

/// A row of `statements/replay_candidates.sql`.
#[derive(QueryableByName)]
struct Candidate {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
}

/// A row of `statements/queue_again.sql`.
#[derive(QueryableByName)]
struct Queued {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

fn stored(what: &str) -> DomainError {
    DomainError::Unexpected(anyhow::anyhow!("stored delivery has an invalid {what}"))
}

impl LogRow {
    /// The record, the body it sends, and its ordering key and sequence.
    fn into_parts(self) -> DomainResult<(DeliveryRecord, String, String, i64)> {
        let status = DeliveryStatus::parse(&self.status).ok_or_else(|| stored("status"))?;
        let record = DeliveryRecord {
            id: DeliveryId(self.id),
            event_id: EventId(self.event_id),
            event_type: EventType::parse(&self.event_type).ok_or_else(|| stored("event type"))?,
            kind: DeliveryKind::parse(&self.kind).ok_or_else(|| stored("kind"))?,
            status,
            attempts: self.attempts,
            next_attempt_at: (status == DeliveryStatus::Pending).then_some(self.next_attempt_at),
            last_attempt_at: self.last_attempt_at,
            last_status_code: self.last_status_code,
            last_error: self.last_error,
            created_at: self.created_at,
            updated_at: self.updated_at,
        };
        Ok((record, self.body, self.ordering_key, self.sequence))
    }
}

/// The rows of `statements/delivery_log.sql` for `id`: `query`'s page, or the one `delivery`.
async fn log_rows(
    conn: &mut AsyncPgConnection,
    id: &WebhookId,
    query: &DeliveryQuery,
    delivery: Option<DeliveryId>,
) -> QueryResult<Vec<LogRow>> {
    named_query!(
        include_str!("statements/delivery_log.sql");
        id: Text = id.as_str(),
        since: Timestamptz = query.since,
        delivery: Nullable<BigInt> = delivery.map(|d| d.0),
        status: Nullable<Text> = query.status.map(DeliveryStatus::as_str),
        event_type: Nullable<Text> = query.event_type.map(EventType::as_str),
        event_id: Nullable<SqlUuid> = query.event_id.map(|e| e.0),
        entity_id: Nullable<Text> = query.entity_id.as_deref(),
        before: Nullable<BigInt> = query.before.map(|d| d.0),
        limit: BigInt = i64::from(query.limit),
    )
    .load(conn)
    .await
}

/// A row of `statements/event_deliveries.sql`: a log row and its subscription.
#[derive(QueryableByName)]
struct EventDeliveryRow {
    #[diesel(embed)]
    log: LogRow,
    #[diesel(sql_type = Text)]
    subscription_id: String,
}

/// The one delivery `delivery` of `id` as the log shows it, whatever its age.
async fn one_delivery(
    conn: &mut AsyncPgConnection,
    id: &WebhookId,
    delivery: DeliveryId,
) -> QueryResult<Option<LogRow>> {
    let query = DeliveryQuery {
        since: OffsetDateTime::UNIX_EPOCH,
        status: None,
        event_type: None,
        event_id: None,
        entity_id: None,
        before: None,
        limit: 1,
    };
    Ok(log_rows(conn, id, &query, Some(delivery)).await?.pop())
}

/// How [`lock_subscription`] locks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lock {
    /// Against a change of the subscription (delete, disable).
    Share,
    /// Against those, and against another writer of the same kind (two replays at once would
    /// both find an event not yet pending and queue it twice).
    Exclusive,
}

/// Locks subscription `id` until the transaction ends and returns its status and whether its
/// key is revoked; `None` if it does not exist.
async fn lock_subscription(
    conn: &mut AsyncPgConnection,
    id: &WebhookId,
    lock: Lock,
) -> QueryResult<Option<(String, bool)>> {
    let query = webhook_subscriptions::table
        .filter(webhook_subscriptions::id.eq(id.as_str()))
        .select((
            webhook_subscriptions::status,
            webhook_subscriptions::api_key_id,
        ));
    let found: Option<(String, Uuid)> = match lock {
        Lock::Share => query.for_share().first(conn).await.optional()?,
        Lock::Exclusive => query.for_no_key_update().first(conn).await.optional()?,
    };
    let Some((status, key)) = found else {
        return Ok(None);
    };
    let revoked: bool = api_keys::table
        .find(key)
        .select(api_keys::revoked_at.is_not_null())
        .first(conn)
        .await?;
    Ok(Some((status, revoked)))
}

/// What a write found.
enum Found<T> {
    Done(T),
    NoWebhook,
    NoDelivery,
    Disabled,
    KeyRevoked,
}

impl<T> Found<T> {
    fn into_result(self) -> DomainResult<T> {
        match self {
            Self::Done(value) => Ok(value),
            Self::NoWebhook => Err(DomainError::NotFound("webhook")),
            Self::NoDelivery => Err(DomainError::NotFound("delivery")),
            Self::Disabled => Err(DomainError::Conflict("Webhook is disabled".into())),
            Self::KeyRevoked => Err(DomainError::Conflict("API key revoked".into())),
        }
    }
}

/// New deliveries of `events` to `id`, of `kind`, due at `at` (`statements/queue_again.sql`).
async fn queue_again(
    conn: &mut AsyncPgConnection,
    id: &WebhookId,
    events: &[Uuid],
    kind: DeliveryKind,
    at: OffsetDateTime,
) -> QueryResult<Vec<i64>> {
    let rows: Vec<Queued> = named_query!(
        include_str!("statements/queue_again.sql");
        at: Timestamptz = at,
        kind: Text = kind.as_str(),
        event_ids: Array<SqlUuid> = events,
        id: Text = id.as_str(),
    )
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|row| row.id).collect())
}

/// [`DeliveryLog`] on PostgreSQL.
#[derive(Clone)]
pub struct PgDeliveryLog {
    pool: PgPool,
    announcer: DeliveryAnnouncer,
}

opaque_debug!(PgDeliveryLog);

impl PgDeliveryLog {
    /// The log on `pool`; deliveries it queues are announced by `announcer` once committed.
    pub fn new(pool: PgPool, announcer: DeliveryAnnouncer) -> Self {
        Self { pool, announcer }
    }

    /// Announces the one delivery of `id` just queued (`queued`, its id) and reads it back as
    /// the log shows it.
    async fn queued_one(&self, id: &WebhookId, queued: Vec<i64>) -> DomainResult<DeliveryRecord> {
        let delivery = queued
            .into_iter()
            .next()
            .ok_or_else(|| stored("id (none queued)"))?;
        self.announcer.announce(1);
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = one_delivery(&mut conn, id, DeliveryId(delivery))
            .await
            .map_err(|e| map_db_error(e, "reading a delivery"))?
            .ok_or_else(|| stored("id (queued, then not found)"))?;
        Ok(row.into_parts()?.0)
    }
}

#[async_trait]
impl DeliveryLog for PgDeliveryLog {
    async fn deliveries(
        &self,
        id: &WebhookId,
        query: &DeliveryQuery,
    ) -> DomainResult<Vec<DeliveryRecord>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        log_rows(&mut conn, id, query, None)
            .await
            .map_err(|e| map_db_error(e, "reading the delivery log"))?
            .into_iter()
            .map(|row| row.into_parts().map(|(record, ..)| record))
            .collect()
    }

    async fn event_deliveries(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        event: EventId,
        limit: u32,
    ) -> DomainResult<Option<(EventType, Vec<(WebhookId, DeliveryRecord)>)>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let shown: Option<String> = events::table
            .filter(events::id.eq(event.0))
            .filter(events::workspace_id.eq(workspace.0))
            .filter(
                diesel::dsl::sql::<Bool>("timetrack_code.shows_to(visible_to, ")
                    .bind::<SqlUuid, _>(user.0)
                    .sql(")"),
            )
            .select(events::event_type)
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading an event"))?;
        let Some(event_type) = shown else {
            return Ok(None);
        };
        let event_type = EventType::parse(&event_type).ok_or_else(|| {
            DomainError::Unexpected(anyhow::anyhow!("unknown event type {event_type}"))
        })?;
        let rows: Vec<EventDeliveryRow> = named_query!(
            include_str!("statements/event_deliveries.sql");
            event: SqlUuid = event.0,
            workspace: SqlUuid = workspace.0,
            user: SqlUuid = user.0,
            limit: BigInt = i64::from(limit),
        )
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading an event's deliveries"))?;
        let found = rows
            .into_iter()
            .map(|row| {
                let subscription = WebhookId::parse(&row.subscription_id)
                    .ok_or_else(|| DomainError::Unexpected(anyhow::anyhow!("stored webhook id")))?;
                Ok((subscription, row.log.into_parts()?.0))
            })
            .collect::<DomainResult<_>>()?;
        Ok(Some((event_type, found)))
    }

    async fn delivery(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
    ) -> DomainResult<Option<DeliveryDetail>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let Some(row) = one_delivery(&mut conn, id, delivery)
            .await
            .map_err(|e| map_db_error(e, "reading a delivery"))?
        else {
            return Ok(None);
        };
        type AttemptRow = (
            i32,
            OffsetDateTime,
            i32,
            Option<i32>,
            Option<String>,
            Option<String>,
            bool,
            Option<String>,
            Option<String>,
        );
        let attempts: Vec<AttemptRow> = delivery_attempts::table
            .filter(delivery_attempts::delivery_id.eq(delivery.0))
            .order(delivery_attempts::attempt.asc())
            .select((
                delivery_attempts::attempt,
                delivery_attempts::started_at,
                delivery_attempts::latency_ms,
                delivery_attempts::status_code,
                delivery_attempts::error,
                delivery_attempts::response_excerpt,
                delivery_attempts::response_excerpt_lossy,
                delivery_attempts::signature,
                delivery_attempts::custom_headers,
            ))
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "reading a delivery's attempts"))?;
        let (record, payload, ordering_key, sequence) = row.into_parts()?;
        Ok(Some(DeliveryDetail {
            ordering_key,
            sequence,
            record,
            payload,
            attempts: attempts
                .into_iter()
                .map(
                    |(
                        number,
                        started_at,
                        duration_ms,
                        status_code,
                        error,
                        response_body,
                        response_body_lossy,
                        signature,
                        custom_headers,
                    )| DeliveryAttempt {
                        number,
                        started_at,
                        duration_ms,
                        status_code,
                        error,
                        response_body,
                        response_body_lossy,
                        signature,
                        custom_headers,
                    },
                )
                .collect(),
        }))
    }

    async fn queue_test(
        &self,
        id: &WebhookId,
        event: &Event,
        sent_as: Option<EventType>,
    ) -> DomainResult<DeliveryRecord> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let found = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                match lock_subscription(conn, id, Lock::Share).await?.as_ref() {
                    None => return Ok(Found::NoWebhook),
                    Some((status, _)) if status == "DELETED" => return Ok(Found::NoWebhook),
                    Some((_, true)) => return Ok(Found::KeyRevoked),
                    Some(_) => {}
                }
                diesel::insert_into(events::table)
                    .values((
                        events::id.eq(event.id.0),
                        events::workspace_id.eq(event.workspace_id.0),
                        events::event_type.eq(event.event_type.as_str()),
                        events::body.eq(&event.body),
                        events::created_at.eq(event.created_at),
                        events::about_webhook_id.eq(id.as_str()),
                        events::ordering_key.eq(&event.ordering_key),
                        events::sent_as.eq(sent_as.map(EventType::as_str)),
                        // Its owner's alone (functions/shows_to.sql): it carries the URL.
                        events::visible_to.eq(webhook_subscriptions::table
                            .filter(webhook_subscriptions::id.eq(id.as_str()))
                            .select(webhook_subscriptions::user_id)
                            .single_value()),
                    ))
                    .execute(conn)
                    .await?;
                let queued = queue_again(
                    conn,
                    id,
                    &[event.id.0],
                    DeliveryKind::Test,
                    event.created_at,
                )
                .await?;
                Ok(Found::Done(queued))
            })
            .await
            .map_err(|e| map_db_error(e, "queueing a test delivery"))?;
        self.queued_one(id, found.into_result()?).await
    }

    async fn resend(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
        at: OffsetDateTime,
    ) -> DomainResult<DeliveryRecord> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let found = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let status = match lock_subscription(conn, id, Lock::Share).await? {
                    None => return Ok(Found::NoWebhook),
                    Some((status, _)) if status == "DELETED" => return Ok(Found::NoWebhook),
                    Some((status, _)) => status,
                };
                let event: Option<Uuid> = deliveries::table
                    .filter(deliveries::id.eq(delivery.0))
                    .filter(deliveries::subscription_id.eq(id.as_str()))
                    .select(deliveries::event_id)
                    .first(conn)
                    .await
                    .optional()?;
                let Some(event) = event else {
                    return Ok(Found::NoDelivery);
                };
                if status != "ACTIVE" {
                    return Ok(Found::Disabled);
                }
                let queued = queue_again(conn, id, &[event], DeliveryKind::Resend, at).await?;
                if queued.is_empty() {
                    // Its event does not show to the webhook's owner (functions/shows_to.sql),
                    // and neither does the delivery in its log.
                    return Ok(Found::NoDelivery);
                }
                Ok(Found::Done(queued))
            })
            .await
            .map_err(|e| map_db_error(e, "queueing a resend"))?;
        self.queued_one(id, found.into_result()?).await
    }

    async fn requeued_since(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        since: OffsetDateTime,
    ) -> DomainResult<Vec<OffsetDateTime>> {
        #[derive(QueryableByName)]
        struct Created {
            #[diesel(sql_type = Timestamptz)]
            created_at: OffsetDateTime,
        }
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<Created> = named_query!(
            include_str!("statements/requeued_since.sql");
            workspace: SqlUuid = workspace.0,
            user: SqlUuid = user.0,
            since: Timestamptz = since,
        )
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "counting the deliveries queued again"))?;
        Ok(rows.into_iter().map(|r| r.created_at).collect())
    }

    async fn replay(&self, id: &WebhookId, window: &ReplayWindow) -> DomainResult<ReplayOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let found = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                match lock_subscription(conn, id, Lock::Exclusive).await? {
                    None => return Ok(Found::NoWebhook),
                    Some((status, _)) if status == "DELETED" => return Ok(Found::NoWebhook),
                    Some((status, _)) if status != "ACTIVE" => return Ok(Found::Disabled),
                    Some(_) => {}
                }
                let candidates: Vec<Candidate> = named_query!(
                    include_str!("statements/replay_candidates.sql");
                    id: Text = id.as_str(),
                    since: Timestamptz = window.since,
                    until: Timestamptz = window.until,
                    only_failed: Bool = window.only_failed,
                    limit: BigInt = i64::from(window.limit) + 1,
                )
                .load(conn)
                .await?;
                let times: Vec<OffsetDateTime> = candidates.iter().map(|c| c.created_at).collect();
                let (take, next_since) = window.cut(&times);
                let ids: Vec<Uuid> = candidates.iter().take(take).map(|c| c.id).collect();
                let queued = if ids.is_empty() {
                    0
                } else {
                    queue_again(conn, id, &ids, DeliveryKind::Replay, window.at)
                        .await?
                        .len()
                };
                Ok(Found::Done(ReplayOutcome {
                    queued: queued as u64,
                    truncated: next_since.is_some(),
                    next_since,
                }))
            })
            .await
            .map_err(|e| map_db_error(e, "queueing a replay"))?;
        let outcome = found.into_result()?;
        self.announcer
            .announce(i64::try_from(outcome.queued).unwrap_or(i64::MAX));
        Ok(outcome)
    }
}
