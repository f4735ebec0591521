//! Clients in PostgreSQL.

use std::sync::LazyLock;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{ClientId, WorkspaceId};
use timetrack_domain::model::{
    Client, ClientStatus, ClientType, Cursor, Event, ListFilter, Page, PageRequest,
};
use timetrack_domain::ports::{ClientRepository, WriteOutcome};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::announce::DeliveryAnnouncer;
use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::outbox::{EventColumns, Queued, outbox_query, outbox_statement, record_if_found};
use super::paging::keyset_before;
use super::pool::{PgPool, opaque_debug};
use super::prepared::{Prepared, Typed};
use super::rates::{Reach, pricing_lock, reprice_under_lock};
use super::schema::clients;
use super::sql::numbered;

#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = clients, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
struct ClientRow {
    id: Uuid,
    workspace_id: Uuid,
    name: String,
    name_lower: String,
    #[diesel(column_name = type_)]
    client_type: String,
    status: String,
    email: Option<String>,
    phone: Option<String>,
    address: Option<String>,
    note: Option<String>,
    currency: String,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

/// The SQL types of [`ClientRow`]'s columns, in its order: what [`SEARCH_SQL`] outputs.
type ClientColumns = (
    SqlUuid,
    SqlUuid,
    Text,
    Text,
    Text,
    Text,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<Text>,
    Nullable<Text>,
    Text,
    Timestamptz,
    Timestamptz,
);

impl From<&Client> for ClientRow {
    fn from(c: &Client) -> Self {
        Self {
            id: c.id.0,
            workspace_id: c.workspace_id.0,
            name: c.name.clone(),
            name_lower: Client::name_key(&c.name),
            client_type: c.client_type.as_str().to_owned(),
            status: c.status.as_str().to_owned(),
            email: c.email.clone(),
            phone: c.phone.clone(),
            address: c.address.clone(),
            note: c.note.clone(),
            currency: c.currency.clone(),
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

impl TryFrom<ClientRow> for Client {
    type Error = DomainError;

    fn try_from(row: ClientRow) -> DomainResult<Self> {
        Ok(Self {
            id: ClientId(row.id),
            workspace_id: WorkspaceId(row.workspace_id),
            name: row.name,
            client_type: ClientType::parse(&row.client_type)
                .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("stored client: {e}")))?,
            status: ClientStatus::parse(&row.status)
                .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("stored client: {e}")))?,
            email: row.email,
            phone: row.phone,
            address: row.address,
            note: row.note,
            currency: row.currency,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

fn to_clients(rows: Vec<ClientRow>) -> DomainResult<Vec<Client>> {
    rows.into_iter().map(Client::try_from).collect()
}

define_sql_function! {
    /// PostgreSQL's `strpos(string, substring)`: the 1-based position of `substring` in
    /// `string`, 0 when absent.
    fn strpos(string: Text, substring: Text) -> Integer;
}

/// `needle` as a LIKE pattern matching it anywhere, with `\`, `%` and `_` taken literally.
fn contains_pattern(needle: &str) -> String {
    let mut pattern = String::with_capacity(needle.len() + 2);
    pattern.push('%');
    for c in needle.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The client search of three characters or more (`statements/search_clients.sql`), numbered:
/// `$1` the workspace, `$2` the lowercased needle, `$3` the same as a `LIKE` pattern
/// ([`contains_pattern`]), `$4` the most rows.
///
/// Two plans serve it, and which is better depends on how common the needle is in the workspace:
/// a needle carried by many names is best found by walking the workspace newest first until
/// `limit` match (the newest-first index, each name checked with `strpos`), a rare one through the
/// trigram index, which returns every match to be sorted. The planner would choose on statistics
/// of the whole table, which say little of one workspace, and planning each call's pattern costs
/// a large share of a cheap search (ADR 0009 in docs/adr/). Instead the statement itself
/// chooses, on the workspace's own names: it counts the needle in the workspace's 500 newest
/// names (an index-only read), and walks when every name was in that sample or when the needle
/// is in at least one in 20 × `limit` of them (1 % for 100 rows: the walk is then expected to read
/// at most about 10,000 names); otherwise it reads the trigram index. Each branch runs only when
/// chosen (a one-time filter on the count).
///
/// Every value is read through a sub-select, so no plan of it depends on the values: the
/// custom plans of a statement's first five runs cost the same as its generic plan, and
/// PostgreSQL then keeps the generic one (no planning per search). That plan is costed for the
/// average workspace, so the rare branch names the workspace as text, the form only the trigram
/// index keys it by (see the baseline migration): no btree index can serve it, and a plan that
/// walked a big workspace for a rare needle cannot be chosen. The result is exact in both
/// branches: the walk stops only at `limit` matches or at the workspace's oldest client.
pub static SEARCH_SQL: LazyLock<String> = LazyLock::new(|| {
    numbered(
        include_str!("statements/search_clients.sql"),
        &SEARCH_PARAMETERS,
    )
});

/// The parameters of [`SEARCH_SQL`], in the order they are bound.
const SEARCH_PARAMETERS: [&str; 4] = ["workspace_id", "needle", "pattern", "limit"];

/// [`ClientRepository`] on PostgreSQL; events go through the outbox in the same transaction.
#[derive(Clone)]
pub struct PgClientRepository {
    pool: PgPool,
    announcer: DeliveryAnnouncer,
}

opaque_debug!(PgClientRepository);

impl PgClientRepository {
    /// The repository on `pool`; `announcer` hears of the deliveries its writes queue.
    /// Searches run as they come (`SlottedSearches` admits them in order).
    pub fn new(pool: PgPool, announcer: DeliveryAnnouncer) -> Self {
        Self { pool, announcer }
    }
}

/// Turns a unique violation on the name into `AlreadyExists` with the existing client's id.
async fn name_clash(
    conn: &mut AsyncPgConnection,
    err: diesel::result::Error,
    client: &Client,
    context: &'static str,
) -> DomainError {
    if violated_constraint(&err) != Some("clients_workspace_name_key") {
        return map_db_error(err, context);
    }
    let existing = clients::table
        .filter(clients::workspace_id.eq(client.workspace_id.0))
        .filter(clients::name_lower.eq(Client::name_key(&client.name)))
        .select(clients::id)
        .first::<Uuid>(conn)
        .await;
    match existing {
        Ok(id) => DomainError::AlreadyExists {
            what: "client",
            id: id.to_string(),
        },
        Err(e) => map_db_error(e, context),
    }
}

#[async_trait]
impl ClientRepository for PgClientRepository {
    async fn create(&self, client: &Client, events: &[Event]) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = ClientRow::from(client);
        let columns = EventColumns::of(events);
        // The client and its events in one statement: atomic, and one round trip (the hot path
        // of event creation).
        let result = Prepared(outbox_query!(
            outbox_statement(include_str!("statements/create_client.sql")), columns;
            id: SqlUuid = row.id,
            workspace_id: SqlUuid = row.workspace_id,
            name: Text = &row.name,
            name_lower: Text = &row.name_lower,
            client_type: Text = &row.client_type,
            status: Text = &row.status,
            email: Nullable<Text> = row.email.as_deref(),
            phone: Nullable<Text> = row.phone.as_deref(),
            address: Nullable<Text> = row.address.as_deref(),
            note: Nullable<Text> = row.note.as_deref(),
            currency: Text = &row.currency,
            created_at: Timestamptz = row.created_at,
            updated_at: Timestamptz = row.updated_at,
        ))
        .get_result::<Queued>(&mut conn)
        .await;
        // One statement, so committed when it returns.
        match result {
            Ok(Queued { queued }) => {
                self.announcer.announce(queued);
                Ok(())
            }
            Err(err) => Err(name_clash(&mut conn, err, client, "creating a client").await),
        }
    }

    async fn get(&self, workspace: WorkspaceId, id: ClientId) -> DomainResult<Option<Client>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        clients::table
            .filter(clients::workspace_id.eq(workspace.0))
            .filter(clients::id.eq(id.0))
            .select(ClientRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading a client"))?
            .map(Client::try_from)
            .transpose()
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Client>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = clients::table
            .filter(clients::workspace_id.eq(workspace.0))
            .select(ClientRow::as_select())
            .order((clients::created_at.desc(), clients::id.desc()))
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(after) = page.after {
            query = query.filter(keyset_before("created_at", after));
        }
        // The stored key is lowercased as `q` is (Unicode, in Rust), so the match is the find's.
        if let Some(q) = &filter.q {
            query = query.filter(strpos(clients::name_lower, q).gt(0));
        }
        if let Some(since) = filter.updated_since {
            query = query.filter(clients::updated_at.ge(since));
        }
        let rows = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing clients"))?;
        Ok(Page::from_overfetch(to_clients(rows)?, page.limit, |c| {
            Cursor {
                created_at: c.created_at,
                id: c.id.0,
            }
        }))
    }

    async fn search(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Client>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        if needle.chars().count() < 3 {
            // No trigram to look up: the workspace is walked newest first. The walk reads only
            // the newest-first index, which carries the lowercased name (an index-only scan, so
            // a miss on a big workspace reads about a tenth of its pages), and only the matches
            // are then fetched by key. One plan serves every such pattern, so the cached
            // prepared statement keeps it. The name is matched with `strpos`, which no index
            // serves: with `LIKE`, a kept plan costed on a large table can choose the trigram
            // index (a pattern it cannot narrow below three characters), which returns every
            // client of the workspace to sort, on a big workspace far slower than the walk.
            let matched = diesel::alias!(clients as matched);
            let newest_matches = matched
                .filter(matched.field(clients::workspace_id).eq(workspace.0))
                .filter(strpos(matched.field(clients::name_lower), needle).gt(0))
                .order((
                    matched.field(clients::created_at).desc(),
                    matched.field(clients::id).desc(),
                ))
                .limit(i64::from(limit))
                .select(matched.field(clients::id));
            // Filtered on the key alone, so every plan of it, the generic one included, is
            // "at most `limit` primary-key lookups".
            let rows = clients::table
                .filter(clients::id.eq_any(newest_matches))
                .order((clients::created_at.desc(), clients::id.desc()))
                .select(ClientRow::as_select())
                .load(&mut conn)
                .await
                .map_err(|e| map_db_error(e, "searching clients"))?;
            return to_clients(rows);
        }
        // Three characters or more: one statement the connection keeps, whose plan does not
        // depend on the values (see [`SEARCH_SQL`]).
        let rows: Vec<ClientRow> = Prepared(Typed::<_, ClientColumns>::new(
            diesel::sql_query(SEARCH_SQL.as_str())
                .bind::<SqlUuid, _>(workspace.0)
                .bind::<Text, _>(needle)
                .bind::<Text, _>(contains_pattern(needle))
                .bind::<diesel::sql_types::BigInt, _>(i64::from(limit)),
        ))
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "searching clients"))?;
        to_clients(rows)
    }

    async fn newest(&self, workspace: WorkspaceId) -> DomainResult<Option<Client>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        clients::table
            .filter(clients::workspace_id.eq(workspace.0))
            .order((clients::created_at.desc(), clients::id.desc()))
            .select(ClientRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading the newest client"))?
            .map(Client::try_from)
            .transpose()
    }

    async fn update(
        &self,
        before: &Client,
        after: &Client,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = ClientRow::from(after);
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                // A new currency moves the prices of the client's entries: they are priced
                // again under the workspace's pricing lock, taken before any row.
                let currency_changed = before.currency != after.currency;
                if currency_changed {
                    pricing_lock(conn, before.workspace_id, true).await?;
                }
                // The row first: its lock orders this change's events after any earlier one's.
                let n = diesel::update(
                    clients::table
                        .filter(clients::workspace_id.eq(before.workspace_id.0))
                        .filter(clients::id.eq(before.id.0))
                        .filter(clients::updated_at.eq(before.updated_at)),
                )
                .set(&row)
                .execute(conn)
                .await?;
                if currency_changed && n > 0 {
                    let reach = Reach {
                        client: Some(before.id.0),
                        ..Reach::default()
                    };
                    reprice_under_lock(conn, before.workspace_id, &reach).await?;
                }
                record_if_found(conn, n, events).await
            })
            .await;
        match queued {
            Ok(queued) => Ok(self.announcer.outcome(queued)),
            Err(err) => Err(name_clash(&mut conn, err, after, "updating a client").await),
        }
    }

    async fn delete(&self, client: &Client, events: &[Event]) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let n = diesel::delete(
                    clients::table
                        .filter(clients::workspace_id.eq(client.workspace_id.0))
                        .filter(clients::id.eq(client.id.0))
                        .filter(clients::updated_at.eq(client.updated_at)),
                )
                .execute(conn)
                .await?;
                record_if_found(conn, n, events).await
            })
            .await
            .map_err(|e| match violated_constraint(&e) {
                Some("projects_client_fkey") => {
                    DomainError::Conflict("Client is used by projects".into())
                }
                _ => map_db_error(e, "deleting a client"),
            })?;
        Ok(self.announcer.outcome(queued))
    }
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn like_metacharacters_are_escaped() {
        assert_eq!(contains_pattern("acme"), "%acme%");
        assert_eq!(contains_pattern("100%_\\x"), "%100\\%\\_\\\\x%");
    }
}
