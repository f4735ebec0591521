//! The catch-up feed in PostgreSQL (`statements/event_feed.sql`, and read backwards
//! `statements/event_feed_back.sql`).

use async_trait::async_trait;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use time::OffsetDateTime;
use timetrack_domain::ids::{EventId, UserId, WorkspaceId};
use timetrack_domain::model::{EventType, FeedEvent, FeedPosition, FeedRead};
use timetrack_domain::ports::EventFeed;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::sql::named_query;

/// A row of `statements/event_feed.sql`: the horizon, and an event unless there is none.
#[derive(diesel::QueryableByName)]
struct FeedRow {
    #[diesel(sql_type = BigInt)]
    horizon: i64,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    event_type: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    created_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Text>)]
    body: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    txid: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    seq: Option<i64>,
}

impl FeedRow {
    fn event(self) -> DomainResult<Option<FeedEvent>> {
        let (Some(id), Some(event_type), Some(created_at), Some(body), Some(txid), Some(seq)) = (
            self.id,
            self.event_type,
            self.created_at,
            self.body,
            self.txid,
            self.seq,
        ) else {
            return Ok(None);
        };
        let event_type = EventType::parse(&event_type).ok_or_else(|| {
            DomainError::Unexpected(anyhow::anyhow!("stored event has type {event_type}"))
        })?;
        Ok(Some(FeedEvent {
            id: EventId(id),
            event_type,
            created_at,
            body,
            position: FeedPosition { txid, seq },
        }))
    }
}

/// [`EventFeed`] on PostgreSQL.
#[derive(Clone)]
pub struct PgEventFeed {
    pool: PgPool,
}

opaque_debug!(PgEventFeed);

impl PgEventFeed {
    /// The feed on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl EventFeed for PgEventFeed {
    async fn read(
        &self,
        workspace: WorkspaceId,
        viewer: UserId,
        after: FeedPosition,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<FeedRead> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let types: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        let rows: Vec<FeedRow> = named_query!(
            include_str!("statements/event_feed.sql");
            workspace: SqlUuid = workspace.0,
            after_txid: BigInt = after.txid,
            after_seq: BigInt = after.seq,
            types: Array<Text> = &types,
            viewer: SqlUuid = viewer.0,
            limit: BigInt = i64::from(limit),
        )
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading the event feed"))?;
        let horizon = FeedPosition {
            txid: <[FeedRow]>::first(&rows).map_or(0, |r| r.horizon),
            seq: 0,
        };
        Ok(FeedRead {
            events: events(rows)?,
            horizon,
        })
    }

    async fn read_back(
        &self,
        workspace: WorkspaceId,
        viewer: UserId,
        before: FeedPosition,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<Vec<FeedEvent>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let types: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        let rows: Vec<FeedRow> = named_query!(
            include_str!("statements/event_feed_back.sql");
            workspace: SqlUuid = workspace.0,
            before_txid: BigInt = before.txid,
            before_seq: BigInt = before.seq,
            types: Array<Text> = &types,
            viewer: SqlUuid = viewer.0,
            limit: BigInt = i64::from(limit),
        )
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading the event feed backwards"))?;
        events(rows)
    }
}

/// The events of a page's rows (a page without events is one row of nulls beside its horizon).
fn events(rows: Vec<FeedRow>) -> DomainResult<Vec<FeedEvent>> {
    let mut events = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(event) = row.event()? {
            events.push(event);
        }
    }
    Ok(events)
}
