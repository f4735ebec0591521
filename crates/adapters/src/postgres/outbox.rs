//! The transactional outbox: events written on the caller's transaction, each with one pending
//! delivery per active subscription of its workspace that lists its type.

use diesel::prelude::*;
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
    pub projects: Vec<Option<Uuid>>,
    pub clients: Vec<Option<Uuid>>,
    pub users: Vec<Option<Uuid>>,
    pub billables: Vec<Option<bool>>,
    pub keys: Vec<&'a str>,
}

impl<'a> EventColumns<'a> {
    pub fn of(events: &'a [Event]) -> Self {
        Self {
            ids: events.iter().map(|e| e.id.0).collect(),
            workspaces: events.iter().map(|e| e.workspace_id.0).collect(),
            types: events.iter().map(|e| e.event_type.as_str()).collect(),
            bodies: events.iter().map(|e| e.body.as_str()).collect(),
            times: events.iter().map(|e| e.created_at).collect(),
            projects: events
                .iter()
                .map(|e| e.subject.project_id.map(|p| p.0))
                .collect(),
            clients: events
                .iter()
                .map(|e| e.subject.client_id.map(|c| c.0))
                .collect(),
            users: events
                .iter()
                .map(|e| e.subject.user_id.map(|u| u.0))
                .collect(),
            billables: events.iter().map(|e| e.subject.billable).collect(),
            keys: events.iter().map(|e| e.ordering_key.as_str()).collect(),
        }
    }
}

/// A statement of `leading_ctes` (common table expressions, each followed by a comma, or
/// nothing) and then the outbox (`statements/outbox.sql`), on the named parameters
/// `event_ids`, `event_workspaces`, `event_types`, `event_bodies`, `event_times`,
/// `event_projects`, `event_clients`, `event_users`, `event_billables` and `event_keys` (the [`EventColumns`]
/// arrays, bound by [`outbox_query!`]): the events, and one pending delivery per active subscription of
/// their workspace listing their type. It returns one row, `queued`: the deliveries it queued,
/// which the caller announces once its transaction has committed (see [`super::announce`]).
pub(crate) fn outbox_statement(leading_ctes: &str) -> String {
    format!(
        "WITH {leading_ctes}\n{}",
        include_str!("statements/outbox.sql")
    )
}

/// [`named_query!`] of an [`outbox_statement`] `$sql` on the [`EventColumns`] `$columns`, then
/// the parameters that follow the `;`.
macro_rules! outbox_query {
    ($sql:expr, $columns:expr; $($rest:tt)*) => {
        $crate::postgres::sql::named_query!(
            $sql;
            event_ids: diesel::sql_types::Array<diesel::sql_types::Uuid> = &$columns.ids,
            event_workspaces: diesel::sql_types::Array<diesel::sql_types::Uuid> =
                &$columns.workspaces,
            event_types: diesel::sql_types::Array<diesel::sql_types::Text> = &$columns.types,
            event_bodies: diesel::sql_types::Array<diesel::sql_types::Text> = &$columns.bodies,
            event_times: diesel::sql_types::Array<diesel::sql_types::Timestamptz> =
                &$columns.times,
            event_projects: diesel::sql_types::Array<
                diesel::sql_types::Nullable<diesel::sql_types::Uuid>,
            > = &$columns.projects,
            event_clients: diesel::sql_types::Array<
                diesel::sql_types::Nullable<diesel::sql_types::Uuid>,
            > = &$columns.clients,
            event_users: diesel::sql_types::Array<
                diesel::sql_types::Nullable<diesel::sql_types::Uuid>,
            > = &$columns.users,
            event_billables: diesel::sql_types::Array<
                diesel::sql_types::Nullable<diesel::sql_types::Bool>,
            > = &$columns.billables,
            event_keys: diesel::sql_types::Array<diesel::sql_types::Text> = &$columns.keys,
            $($rest)*
        )
    };
}
pub(crate) use outbox_query;

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
    Prepared(outbox_query!(outbox_statement(""), columns;))
        .get_result::<Queued>(conn)
        .await
        .map(|row| row.queued)
}

/// The tail of a conditional change (an UPDATE or DELETE that matched `rows` rows, inside the
/// change's transaction on `conn`): `events` and their deliveries when it found its row,
/// nothing when the row had changed since it was read (`None`).
pub(crate) async fn record_if_found(
    conn: &mut AsyncPgConnection,
    rows: usize,
    events: &[Event],
) -> QueryResult<Option<i64>> {
    if rows == 0 {
        return Ok(None);
    }
    record_events(conn, events).await.map(Some)
}

/// The channel on which committed deliveries are announced.
pub const DELIVERY_CHANNEL: &str = "timetrack_deliveries";
