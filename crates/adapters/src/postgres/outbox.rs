//! The transactional outbox: events written on the caller's transaction, each with one pending
//! delivery per active subscription of its workspace that lists its type.

use diesel::prelude::*;
use diesel::sql_types::{Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::model::Event;
use uuid::Uuid;

use super::schema::events;

#[derive(Debug, Insertable)]
#[diesel(table_name = events)]
struct EventRow<'a> {
    id: Uuid,
    workspace_id: Uuid,
    event_type: &'a str,
    body: &'a str,
    created_at: OffsetDateTime,
}

/// Writes `events` and their deliveries on `conn`, which MUST be inside the transaction of the
/// change that caused them: both commit together or not at all.
pub(crate) async fn record_events(
    conn: &mut AsyncPgConnection,
    events: &[Event],
) -> QueryResult<()> {
    if events.is_empty() {
        return Ok(());
    }
    let rows: Vec<EventRow<'_>> = events.iter().map(row).collect();
    diesel::insert_into(events::table)
        .values(&rows)
        .execute(conn)
        .await?;
    for event in events {
        diesel::sql_query(
            "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, \
             next_attempt_at, created_at, updated_at) \
             SELECT $1, s.id, s.workspace_id, 'PENDING', $2, $2, $2 \
             FROM webhook_subscriptions s \
             WHERE s.workspace_id = $3 AND s.status = 'ACTIVE' AND $4 = ANY (s.events)",
        )
        .bind::<SqlUuid, _>(event.id.0)
        .bind::<Timestamptz, _>(event.created_at)
        .bind::<SqlUuid, _>(event.workspace_id.0)
        .bind::<Text, _>(event.event_type.as_str())
        .execute(conn)
        .await?;
    }
    // Delivered on commit only, once per transaction: wakes the delivery workers at once.
    diesel::sql_query(format!("NOTIFY {DELIVERY_CHANNEL}"))
        .execute(conn)
        .await?;
    Ok(())
}

/// The channel on which committed deliveries are announced.
pub const DELIVERY_CHANNEL: &str = "timetrack_deliveries";

fn row(event: &Event) -> EventRow<'_> {
    EventRow {
        id: event.id.0,
        workspace_id: event.workspace_id.0,
        event_type: event.event_type.as_str(),
        body: &event.body,
        created_at: event.created_at,
    }
}
