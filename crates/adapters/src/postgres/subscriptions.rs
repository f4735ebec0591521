//! Webhook subscriptions, their deletion (with cancelled deliveries and an audit row) and the
//! delivery log, in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{ApiKeyId, ClientId, ProjectId, UserId, WorkspaceId};
use timetrack_domain::model::{
    AttemptSummary, AuditEntry, CustomHeaders, DisabledReason, EventType, HourlyStats,
    Subscription, SubscriptionChange, SubscriptionFilters, SubscriptionStatus, WebhookId,
};
use timetrack_domain::ports::SubscriptionRepository;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};

use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::queue::cancel_queued;
use super::schema::{api_keys, audit_log, webhook_subscriptions, workspaces};
use super::sql::named_query;
use crate::secrets::{Purpose, SecretBox};

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_subscriptions, check_for_backend(diesel::pg::Pg))]
struct SubscriptionRow {
    id: String,
    workspace_id: Uuid,
    user_id: Uuid,
    api_key_id: Uuid,
    url: String,
    events: Vec<Option<String>>,
    description: Option<String>,
    secret: String,
    status: String,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    previous_secret_expires_at: Option<OffsetDateTime>,
    filter_project_ids: Option<Vec<Option<Uuid>>>,
    filter_client_ids: Option<Vec<Option<Uuid>>>,
    filter_user_ids: Option<Vec<Option<Uuid>>>,
    filter_billable: Option<bool>,
    disabled_reason: Option<String>,
    /// Sealed in storage, opened in [`PgSubscriptionRepository::subscription`].
    headers: Option<String>,
}

/// The filter columns of [`SubscriptionFilters`]: `None` where no such filter is given.
type FilterColumns = (
    Option<Vec<Option<Uuid>>>,
    Option<Vec<Option<Uuid>>>,
    Option<Vec<Option<Uuid>>>,
    Option<bool>,
);

fn filter_columns(filters: &SubscriptionFilters) -> FilterColumns {
    fn ids<T: Copy>(ids: Option<&Vec<T>>, uuid: fn(T) -> Uuid) -> Option<Vec<Option<Uuid>>> {
        ids.map(|ids| ids.iter().map(|&id| Some(uuid(id))).collect())
    }
    (
        ids(filters.project_ids.as_ref(), |p: ProjectId| p.0),
        ids(filters.client_ids.as_ref(), |c: ClientId| c.0),
        ids(filters.user_ids.as_ref(), |u: UserId| u.0),
        filters.billable,
    )
}

/// The columns a [`SubscriptionChange`] sets (`None`: left as it is; the filters are set all
/// together).
#[derive(AsChangeset)]
#[diesel(table_name = webhook_subscriptions)]
struct ChangeRow<'a> {
    url: Option<&'a str>,
    events: Option<Vec<&'a str>>,
    description: Option<Option<&'a str>>,
    filter_project_ids: Option<Option<Vec<Option<Uuid>>>>,
    filter_client_ids: Option<Option<Vec<Option<Uuid>>>>,
    filter_user_ids: Option<Option<Vec<Option<Uuid>>>>,
    filter_billable: Option<Option<bool>>,
    /// Sealed; `Some(None)` removes them all.
    headers: Option<Option<String>>,
    updated_at: OffsetDateTime,
}

/// Why a subscription cannot become active.
enum Refusal {
    KeyRevoked,
    AtCap,
}

/// Locks `workspace`'s row: it serialises everything that counts against the cap of active
/// subscriptions, so the cap holds under concurrent subscribes and enables.
async fn lock_workspace(conn: &mut AsyncPgConnection, workspace: Uuid) -> QueryResult<()> {
    workspaces::table
        .find(workspace)
        .select(workspaces::id)
        .for_update()
        .first::<Uuid>(conn)
        .await
        .map(drop)
}

/// Why one more active subscription of `workspace` made with `key` cannot be, if it cannot: the
/// key is revoked, or the workspace has `max_active` active ones. Run after [`lock_workspace`].
/// The key is checked in the caller's write and share-locked until it commits: a revocation
/// either committed before (seen here, whatever a cache of verified keys said) or waits for the
/// write and then disables what it made active.
async fn refusal(
    conn: &mut AsyncPgConnection,
    workspace: Uuid,
    key: Uuid,
    max_active: u32,
) -> QueryResult<Option<Refusal>> {
    let key_live = api_keys::table
        .find(key)
        .filter(api_keys::revoked_at.is_null())
        .select(api_keys::id)
        .for_share()
        .first::<Uuid>(conn)
        .await
        .optional()?;
    if key_live.is_none() {
        return Ok(Some(Refusal::KeyRevoked));
    }
    let active: i64 = webhook_subscriptions::table
        .filter(webhook_subscriptions::workspace_id.eq(workspace))
        .filter(webhook_subscriptions::status.eq("ACTIVE"))
        .count()
        .get_result(conn)
        .await?;
    Ok((active >= i64::from(max_active)).then_some(Refusal::AtCap))
}

/// What an enable found.
enum Enabled {
    Now,
    Already,
    NotFound,
    KeyRevoked,
    AtCap,
}

/// A row of `statements/hourly_stats.sql`.
#[derive(QueryableByName)]
struct HourRow {
    #[diesel(sql_type = Timestamptz)]
    start: OffsetDateTime,
    #[diesel(sql_type = BigInt)]
    delivered: i64,
    #[diesel(sql_type = BigInt)]
    failed: i64,
    #[diesel(sql_type = Nullable<Integer>)]
    p50_ms: Option<i32>,
    #[diesel(sql_type = Nullable<Integer>)]
    p95_ms: Option<i32>,
}

/// The row of `statements/filter_id_outside.sql`.
#[derive(QueryableByName)]
struct OutsideRow {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

/// The row of `statements/attempt_summary.sql`.
#[derive(QueryableByName)]
struct SummaryRow {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_attempt_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_success_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_failure_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Integer>)]
    last_status_code: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
    #[diesel(sql_type = BigInt)]
    consecutive_failures: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    streak_reset_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    failing_since: Option<OffsetDateTime>,
    #[diesel(sql_type = BigInt)]
    pending_deliveries: i64,
}

fn stored(what: &str) -> DomainError {
    DomainError::Unexpected(anyhow::anyhow!("stored subscription has an invalid {what}"))
}

impl TryFrom<SubscriptionRow> for Subscription {
    type Error = DomainError;

    fn try_from(row: SubscriptionRow) -> DomainResult<Self> {
        Ok(Self {
            id: WebhookId::parse(&row.id).ok_or_else(|| stored("id"))?,
            workspace_id: WorkspaceId(row.workspace_id),
            user_id: UserId(row.user_id),
            api_key_id: ApiKeyId(row.api_key_id),
            url: row.url,
            events: row
                .events
                .iter()
                .map(|e| {
                    e.as_deref()
                        .and_then(EventType::parse)
                        .ok_or_else(|| stored("event"))
                })
                .collect::<DomainResult<_>>()?,
            description: row.description,
            secret: row.secret,
            status: SubscriptionStatus::parse(&row.status)?,
            disabled_reason: row
                .disabled_reason
                .as_deref()
                .map(DisabledReason::parse)
                .transpose()?,
            created_at: row.created_at,
            updated_at: row.updated_at,
            previous_secret_expires_at: row.previous_secret_expires_at,
            filters: SubscriptionFilters {
                project_ids: row
                    .filter_project_ids
                    .map(|ids| ids.into_iter().flatten().map(ProjectId).collect()),
                client_ids: row
                    .filter_client_ids
                    .map(|ids| ids.into_iter().flatten().map(ClientId).collect()),
                user_ids: row
                    .filter_user_ids
                    .map(|ids| ids.into_iter().flatten().map(UserId).collect()),
                billable: row.filter_billable,
            },
            headers: row
                .headers
                .as_deref()
                .map(CustomHeaders::from_stored)
                .transpose()?
                .unwrap_or_default(),
        })
    }
}

impl From<&Subscription> for SubscriptionRow {
    fn from(s: &Subscription) -> Self {
        let filters = filter_columns(&s.filters);
        Self {
            id: s.id.to_string(),
            workspace_id: s.workspace_id.0,
            user_id: s.user_id.0,
            api_key_id: s.api_key_id.0,
            url: s.url.clone(),
            events: s
                .events
                .iter()
                .map(|e| Some(e.as_str().to_owned()))
                .collect(),
            description: s.description.clone(),
            secret: s.secret.clone(),
            status: s.status.as_str().to_owned(),
            created_at: s.created_at,
            updated_at: s.updated_at,
            previous_secret_expires_at: s.previous_secret_expires_at,
            filter_project_ids: filters.0,
            filter_client_ids: filters.1,
            filter_user_ids: filters.2,
            filter_billable: filters.3,
            disabled_reason: s.disabled_reason.map(|r| r.as_str().to_owned()),
            headers: (!s.headers.is_empty()).then(|| s.headers.to_stored()),
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = audit_log)]
struct AuditRow<'a> {
    workspace_id: Uuid,
    actor_user_id: Option<Uuid>,
    action: &'a str,
    target_type: &'a str,
    target_id: &'a str,
    reason: Option<&'a str>,
    created_at: OffsetDateTime,
}

impl<'a> From<&'a AuditEntry> for AuditRow<'a> {
    fn from(a: &'a AuditEntry) -> Self {
        Self {
            workspace_id: a.workspace_id.0,
            actor_user_id: a.actor_user_id.map(|u| u.0),
            action: a.action,
            target_type: a.target_type,
            target_id: &a.target_id,
            reason: a.reason.as_deref(),
            created_at: a.at,
        }
    }
}

/// What a create's transaction decided.
enum Created {
    Stored,
    AtCap,
    KeyRevoked,
}

/// [`SubscriptionRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgSubscriptionRepository {
    pool: PgPool,
    secrets: SecretBox,
}

opaque_debug!(PgSubscriptionRepository);

impl PgSubscriptionRepository {
    /// The repository on `pool`; signing secrets are stored sealed by `secrets`.
    pub fn new(pool: PgPool, secrets: SecretBox) -> Self {
        Self { pool, secrets }
    }

    /// A stored row as the domain's subscription, its secret and headers opened.
    fn subscription(&self, mut row: SubscriptionRow) -> DomainResult<Subscription> {
        row.secret = self
            .secrets
            .open(Purpose::WebhookSecret, &row.secret)
            .map_err(DomainError::Unexpected)?;
        row.headers = row
            .headers
            .map(|sealed| self.secrets.open(Purpose::WebhookHeaders, &sealed))
            .transpose()
            .map_err(DomainError::Unexpected)?;
        Subscription::try_from(row)
    }

    /// `headers` as stored: sealed, or NULL for none.
    fn sealed_headers(&self, headers: &CustomHeaders) -> Option<String> {
        (!headers.is_empty()).then(|| {
            self.secrets
                .seal(Purpose::WebhookHeaders, &headers.to_stored())
        })
    }
}

impl PgSubscriptionRepository {
    /// Moves subscription `id` to `status` (`DELETED`, or `DISABLED` with `reason`), cancels its
    /// pending deliveries (they are never sent) and writes `audit`, in one transaction. One
    /// already in `status` stays as it is (no audit row); no subscription, or a deleted one
    /// asked to change, is `NotFound("webhook")`.
    async fn end(
        &self,
        id: &WebhookId,
        status: &'static str,
        reason: Option<&'static str>,
        audit: &AuditEntry,
        what: &'static str,
    ) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let id = id.as_str();
        let audit_row = AuditRow::from(audit);
        let found = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let now: Option<String> = webhook_subscriptions::table
                    .find(id)
                    .select(webhook_subscriptions::status)
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                match now.as_deref() {
                    None => return Ok(false),
                    Some(now) if now == status => return Ok(true),
                    Some("DELETED") => return Ok(false),
                    Some(_) => {}
                }
                diesel::update(webhook_subscriptions::table.find(id))
                    .set((
                        webhook_subscriptions::status.eq(status),
                        webhook_subscriptions::disabled_reason.eq(reason),
                        webhook_subscriptions::updated_at.eq(audit_row.created_at),
                    ))
                    .execute(conn)
                    .await?;
                cancel_queued(conn, id, audit_row.created_at).await?;
                diesel::insert_into(audit_log::table)
                    .values(&audit_row)
                    .execute(conn)
                    .await?;
                Ok(true)
            })
            .await
            .map_err(|e| map_db_error(e, what))?;
        if found {
            Ok(())
        } else {
            Err(DomainError::NotFound("webhook"))
        }
    }
}

#[async_trait]
impl SubscriptionRepository for PgSubscriptionRepository {
    async fn create(&self, subscription: &Subscription, max_active: u32) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut row = SubscriptionRow::from(subscription);
        row.secret = self.secrets.seal(Purpose::WebhookSecret, &row.secret);
        row.headers = self.sealed_headers(&subscription.headers);
        let workspace = subscription.workspace_id.0;
        let stored = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                lock_workspace(conn, workspace).await?;
                match refusal(conn, workspace, row.api_key_id, max_active).await? {
                    Some(Refusal::KeyRevoked) => return Ok(Created::KeyRevoked),
                    Some(Refusal::AtCap) => return Ok(Created::AtCap),
                    None => {}
                }
                diesel::insert_into(webhook_subscriptions::table)
                    .values(&row)
                    .execute(conn)
                    .await?;
                Ok(Created::Stored)
            })
            .await
            .map_err(|e| map_db_error(e, "creating a subscription"))?;
        match stored {
            Created::Stored => Ok(()),
            Created::AtCap => Err(DomainError::Conflict("Subscription limit reached".into())),
            Created::KeyRevoked => Err(DomainError::Unauthorized),
        }
    }

    async fn get(&self, id: &WebhookId) -> DomainResult<Option<Subscription>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        webhook_subscriptions::table
            .find(id.as_str())
            .select(SubscriptionRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading a subscription"))?
            .map(|row| self.subscription(row))
            .transpose()
    }

    async fn list(&self, workspace: WorkspaceId, user: UserId) -> DomainResult<Vec<Subscription>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        webhook_subscriptions::table
            .filter(webhook_subscriptions::workspace_id.eq(workspace.0))
            .filter(webhook_subscriptions::user_id.eq(user.0))
            // Written out, not bound: the workspace's index of webhooks is partial on it, so
            // that the reference checks of deliveries cannot take it (the baseline migration's header), and
            // only a constant proves a partial index's condition in every plan.
            .filter(diesel::dsl::sql::<diesel::sql_types::Bool>(
                "webhook_subscriptions.status <> 'DELETED'",
            ))
            .order((
                webhook_subscriptions::created_at.desc(),
                webhook_subscriptions::id.desc(),
            ))
            .select(SubscriptionRow::as_select())
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing subscriptions"))?
            .into_iter()
            .map(|row| self.subscription(row))
            .collect()
    }

    async fn update(
        &self,
        id: &WebhookId,
        change: &SubscriptionChange,
        audit: &AuditEntry,
    ) -> DomainResult<Subscription> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let audit_row = AuditRow::from(audit);
        let filters = change.filters.as_ref().map(filter_columns);
        let row = ChangeRow {
            filter_project_ids: filters.as_ref().map(|f| f.0.clone()),
            filter_client_ids: filters.as_ref().map(|f| f.1.clone()),
            filter_user_ids: filters.as_ref().map(|f| f.2.clone()),
            filter_billable: filters.as_ref().map(|f| f.3),
            url: change.url.as_deref(),
            events: change
                .events
                .as_ref()
                .map(|events| events.iter().map(|e| e.as_str()).collect()),
            description: change.description.as_ref().map(Option::as_deref),
            headers: change.headers.as_ref().map(|h| self.sealed_headers(h)),
            updated_at: change.updated_at,
        };
        let stored = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                // Only the fields the change sets: a concurrent change of others stands.
                let stored = diesel::update(
                    webhook_subscriptions::table
                        .find(id.as_str())
                        .filter(webhook_subscriptions::status.ne("DELETED")),
                )
                .set(&row)
                .returning(SubscriptionRow::as_returning())
                .get_result(conn)
                .await
                .optional()?;
                if stored.is_some() {
                    diesel::insert_into(audit_log::table)
                        .values(&audit_row)
                        .execute(conn)
                        .await?;
                }
                Ok(stored)
            })
            .await
            .map_err(|e| map_db_error(e, "changing a subscription"))?;
        stored
            .map(|row| self.subscription(row))
            .ok_or(DomainError::NotFound("webhook"))?
    }

    async fn enable(
        &self,
        id: &WebhookId,
        max_active: u32,
        audit: &AuditEntry,
    ) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let id = id.as_str();
        let audit_row = AuditRow::from(audit);
        let outcome = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let found: Option<(Uuid, Uuid, String)> = webhook_subscriptions::table
                    .find(id)
                    .select((
                        webhook_subscriptions::workspace_id,
                        webhook_subscriptions::api_key_id,
                        webhook_subscriptions::status,
                    ))
                    .first(conn)
                    .await
                    .optional()?;
                let Some((workspace, key, _)) = found else {
                    return Ok(Enabled::NotFound);
                };
                lock_workspace(conn, workspace).await?;
                let status: String = webhook_subscriptions::table
                    .find(id)
                    .select(webhook_subscriptions::status)
                    .for_update()
                    .first(conn)
                    .await?;
                match status.as_str() {
                    "DELETED" => return Ok(Enabled::NotFound),
                    "ACTIVE" => return Ok(Enabled::Already),
                    _ => {}
                }
                match refusal(conn, workspace, key, max_active).await? {
                    Some(Refusal::KeyRevoked) => return Ok(Enabled::KeyRevoked),
                    Some(Refusal::AtCap) => return Ok(Enabled::AtCap),
                    None => {}
                }
                diesel::update(webhook_subscriptions::table.find(id))
                    .set((
                        webhook_subscriptions::status.eq("ACTIVE"),
                        webhook_subscriptions::disabled_reason.eq(None::<&str>),
                        webhook_subscriptions::failing_since.eq(None::<OffsetDateTime>),
                        webhook_subscriptions::failing_notified_at.eq(None::<OffsetDateTime>),
                        webhook_subscriptions::streak_reset_at.eq(Some(audit_row.created_at)),
                        webhook_subscriptions::updated_at.eq(audit_row.created_at),
                    ))
                    .execute(conn)
                    .await?;
                diesel::insert_into(audit_log::table)
                    .values(&audit_row)
                    .execute(conn)
                    .await?;
                Ok(Enabled::Now)
            })
            .await
            .map_err(|e| map_db_error(e, "enabling a subscription"))?;
        match outcome {
            Enabled::Now | Enabled::Already => Ok(()),
            Enabled::NotFound => Err(DomainError::NotFound("webhook")),
            Enabled::KeyRevoked => Err(DomainError::Conflict("API key revoked".into())),
            Enabled::AtCap => Err(DomainError::Conflict("Subscription limit reached".into())),
        }
    }

    async fn hourly_stats(
        &self,
        id: &WebhookId,
        now: OffsetDateTime,
    ) -> DomainResult<Vec<HourlyStats>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<HourRow> = named_query!(
            include_str!("statements/hourly_stats.sql");
            now: Timestamptz = now,
            id: Text = id.as_str(),
        )
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading a subscription's hourly statistics"))?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        let ms = |n: Option<i32>| n.and_then(|n| u32::try_from(n).ok());
        Ok(rows
            .into_iter()
            .map(|row| HourlyStats {
                start: row.start,
                delivered: count(row.delivered),
                failed: count(row.failed),
                p50_ms: ms(row.p50_ms),
                p95_ms: ms(row.p95_ms),
            })
            .collect())
    }

    async fn attempt_summary(&self, id: &WebhookId) -> DomainResult<AttemptSummary> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row: SummaryRow = named_query!(
            include_str!("statements/attempt_summary.sql");
            id: Text = id.as_str(),
        )
        .get_result(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading a subscription's attempts"))?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(AttemptSummary {
            last_attempt_at: row.last_attempt_at,
            last_success_at: row.last_success_at,
            last_failure_at: row.last_failure_at,
            last_status_code: row.last_status_code,
            last_error: row.last_error,
            consecutive_failures: count(row.consecutive_failures),
            streak_reset_at: row.streak_reset_at,
            failing_since: row.failing_since,
            pending_deliveries: count(row.pending_deliveries),
        })
    }

    async fn delete(&self, id: &WebhookId, audit: &AuditEntry) -> DomainResult<()> {
        self.end(id, "DELETED", None, audit, "deleting a subscription")
            .await
    }

    async fn disable(&self, id: &WebhookId, audit: &AuditEntry) -> DomainResult<()> {
        let reason = Some(DisabledReason::Manual.as_str());
        self.end(id, "DISABLED", reason, audit, "pausing a subscription")
            .await
    }

    async fn filter_id_outside(
        &self,
        workspace: WorkspaceId,
        filters: &SubscriptionFilters,
    ) -> DomainResult<Option<(&'static str, Uuid)>> {
        let (projects, clients, users, _) = filter_columns(filters);
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let outside: Option<OutsideRow> = named_query!(
            include_str!("statements/filter_id_outside.sql");
            project_ids: Array<Nullable<SqlUuid>> = projects.unwrap_or_default(),
            client_ids: Array<Nullable<SqlUuid>> = clients.unwrap_or_default(),
            user_ids: Array<Nullable<SqlUuid>> = users.unwrap_or_default(),
            workspace: SqlUuid = workspace.0,
        )
        .get_result(&mut conn)
        .await
        .optional()
        .map_err(|e| map_db_error(e, "checking a subscription's filters"))?;
        outside
            .map(|row| {
                ["project_ids", "client_ids", "user_ids"]
                    .into_iter()
                    .find(|name| *name == row.name)
                    .map(|name| (name, row.id))
                    .ok_or_else(|| stored("filter name"))
            })
            .transpose()
    }

    async fn rotate_secret(
        &self,
        id: &WebhookId,
        secret: &str,
        previous_expires_at: OffsetDateTime,
        audit: &AuditEntry,
    ) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let sealed = self.secrets.seal(Purpose::WebhookSecret, secret);
        let audit_row = AuditRow::from(audit);
        let rotated = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let rotated = named_query!(
                    include_str!("statements/rotate_secret.sql");
                    previous_expires_at: Timestamptz = previous_expires_at,
                    at: Timestamptz = audit_row.created_at,
                    secret: Text = &sealed,
                    id: Text = id.as_str(),
                )
                .execute(conn)
                .await?;
                if rotated == 1 {
                    diesel::insert_into(audit_log::table)
                        .values(&audit_row)
                        .execute(conn)
                        .await?;
                }
                Ok(rotated)
            })
            .await
            .map_err(|e| map_db_error(e, "rotating a subscription's secret"))?;
        if rotated == 1 {
            Ok(())
        } else {
            Err(DomainError::NotFound("webhook"))
        }
    }
}
