//! The transactional outbox: events written on the caller's transaction, each with one pending
//! delivery per active subscription of its workspace that lists its type.

use diesel::prelude::*;
use diesel::sql_types::{Array, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::model::Event;
use uuid::Uuid;

use super::prepared::Prepared;

/// The columns of events, for [`OUTBOX`]'s arrays.
pub(crate) struct EventColumns<'a> {
    pub ids: Vec<Uuid>,
    pub workspaces: Vec<Uuid>,
    pub types: Vec<&'a str>,
    pub bodies: Vec<&'a str>,
    pub times: Vec<OffsetDateTime>,
}

impl<'a> EventColumns<'a> {
    pub fn of(events: &'a [Event]) -> Self {
        Self {
            ids: events.iter().map(|e| e.id.0).collect(),
            workspaces: events.iter().map(|e| e.workspace_id.0).collect(),
            types: events.iter().map(|e| e.event_type.as_str()).collect(),
            bodies: events.iter().map(|e| e.body.as_str()).collect(),
            times: events.iter().map(|e| e.created_at).collect(),
        }
    }
}

/// The outbox as the tail of one statement, on parameters `$1` to `$5` (the [`EventColumns`]
/// arrays) of a query whose other CTEs come first: the events, and one pending delivery per
/// active subscription of their workspace listing their type. It returns one row, `queued`: the
/// deliveries it queued, which the caller announces once its transaction has committed (see
/// [`super::announce`]).
pub(crate) fn outbox_statement(leading_ctes: &str) -> String {
    format!(
        "WITH {leading_ctes} e AS ( \
             INSERT INTO events (id, workspace_id, event_type, body, created_at) \
             SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], \
                                  $5::timestamptz[]) \
             RETURNING id, workspace_id, event_type, created_at \
         ), d AS ( \
             INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, \
                                     next_attempt_at, created_at, updated_at) \
             SELECT e.id, s.id, s.workspace_id, 'PENDING', e.created_at, e.created_at, \
                    e.created_at \
             FROM e JOIN webhook_subscriptions s \
               ON s.workspace_id = e.workspace_id AND s.status = 'ACTIVE' \
              AND e.event_type = ANY (s.events) \
             RETURNING 1 \
         ) \
         SELECT count(*) AS queued FROM d"
    )
}

/// The row of [`outbox_statement`].
#[derive(diesel::QueryableByName)]
pub(crate) struct Queued {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub queued: i64,
}

/// Writes `events` and their deliveries on `conn`, which MUST be inside the transaction of the
/// change that caused them: both commit together or not at all (see [`outbox_statement`]).
/// Returns the deliveries queued, to announce after the commit.
pub(crate) async fn record_events(
    conn: &mut AsyncPgConnection,
    events: &[Event],
) -> QueryResult<i64> {
    if events.is_empty() {
        return Ok(0);
    }
    let columns = EventColumns::of(events);
    Prepared(
        diesel::sql_query(outbox_statement(""))
            .bind::<Array<SqlUuid>, _>(&columns.ids)
            .bind::<Array<SqlUuid>, _>(&columns.workspaces)
            .bind::<Array<Text>, _>(&columns.types)
            .bind::<Array<Text>, _>(&columns.bodies)
            .bind::<Array<Timestamptz>, _>(&columns.times),
    )
    .get_result::<Queued>(conn)
    .await
    .map(|row| row.queued)
}

/// The channel on which committed deliveries are announced.
pub const DELIVERY_CHANNEL: &str = "timetrack_deliveries";
