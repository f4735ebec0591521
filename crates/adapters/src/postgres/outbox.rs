//! The transactional outbox: events written on the caller's transaction, each with one pending
//! delivery per active subscription of its workspace that lists its type.

use diesel::prelude::*;
use diesel::sql_types::{Array, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::model::Event;
use uuid::Uuid;

use super::prepared::Prepared;
use super::sql::named_query;

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

/// A statement of `leading_ctes` (common table expressions, each followed by a comma, or
/// nothing) and then the outbox (`statements/outbox.sql`), on the named parameters
/// `event_ids`, `event_workspaces`, `event_types`, `event_bodies` and `event_times` (the
/// [`EventColumns`] arrays): the events, and one pending delivery per active subscription of
/// their workspace listing their type. It returns one row, `queued`: the deliveries it queued,
/// which the caller announces once its transaction has committed (see [`super::announce`]).
pub(crate) fn outbox_statement(leading_ctes: &str) -> String {
    format!(
        "WITH {leading_ctes}\n{}",
        include_str!("statements/outbox.sql")
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
    Prepared(named_query!(
        outbox_statement("");
        event_ids: Array<SqlUuid> = &columns.ids,
        event_workspaces: Array<SqlUuid> = &columns.workspaces,
        event_types: Array<Text> = &columns.types,
        event_bodies: Array<Text> = &columns.bodies,
        event_times: Array<Timestamptz> = &columns.times,
    ))
    .get_result::<Queued>(conn)
    .await
    .map(|row| row.queued)
}

/// The channel on which committed deliveries are announced.
pub const DELIVERY_CHANNEL: &str = "timetrack_deliveries";
