//! API keys in PostgreSQL, looked up by the SHA-256 of the key.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{ApiKeyId, UserId, WorkspaceId};
use timetrack_domain::model::{ApiKey, KeyHash, Role, Scope, Scopes};
use timetrack_domain::ports::ApiKeyRepository;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::schema::{api_keys, memberships, webhook_subscriptions};
use super::sql::named_query;

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = api_keys, check_for_backend(diesel::pg::Pg))]
struct ApiKeyRow {
    id: Uuid,
    workspace_id: Uuid,
    user_id: Uuid,
    name: Option<String>,
    key_prefix: String,
    created_at: OffsetDateTime,
    revoked_at: Option<OffsetDateTime>,
    last_used_at: Option<OffsetDateTime>,
    scopes: Option<Vec<Option<String>>>,
    expires_at: Option<OffsetDateTime>,
}

/// A key's scopes as stored: NULL for every scope, else their names.
fn stored_scopes(scopes: Scopes) -> Option<Vec<String>> {
    (scopes != Scopes::ALL).then(|| scopes.names().into_iter().map(str::to_owned).collect())
}

impl From<ApiKeyRow> for ApiKey {
    fn from(row: ApiKeyRow) -> Self {
        Self {
            // Names this version does not know (written by a newer one) grant nothing.
            scopes: row.scopes.map_or(Scopes::ALL, |names| {
                Scopes::of(names.iter().flatten().filter_map(|n| Scope::parse(n)))
            }),
            expires_at: row.expires_at,
            id: ApiKeyId(row.id),
            workspace_id: WorkspaceId(row.workspace_id),
            user_id: UserId(row.user_id),
            name: row.name,
            prefix: row.key_prefix,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
            last_used_at: row.last_used_at,
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = api_keys)]
struct NewApiKeyRow<'a> {
    id: Uuid,
    workspace_id: Uuid,
    user_id: Uuid,
    name: Option<&'a str>,
    key_prefix: &'a str,
    key_hash: &'a [u8],
    created_at: OffsetDateTime,
    scopes: Option<Vec<String>>,
    expires_at: Option<OffsetDateTime>,
}

/// [`ApiKeyRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgApiKeyRepository {
    pool: PgPool,
}

opaque_debug!(PgApiKeyRepository);

impl PgApiKeyRepository {
    /// The repository on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl ApiKeyRepository for PgApiKeyRepository {
    async fn create(&self, key: &ApiKey, hash: &KeyHash) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        diesel::insert_into(api_keys::table)
            .values(&NewApiKeyRow {
                id: key.id.0,
                workspace_id: key.workspace_id.0,
                user_id: key.user_id.0,
                name: key.name.as_deref(),
                key_prefix: &key.prefix,
                key_hash: &hash.0,
                created_at: key.created_at,
                scopes: stored_scopes(key.scopes),
                expires_at: key.expires_at,
            })
            .execute(&mut conn)
            .await
            .map_err(|e| match violated_constraint(&e) {
                Some("api_keys_workspace_id_user_id_fkey") => DomainError::NotFound("membership"),
                _ => map_db_error(e, "inserting an API key"),
            })?;
        Ok(())
    }

    async fn find_active_by_hash(&self, hash: &KeyHash) -> DomainResult<Option<(ApiKey, Role)>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let found: Option<(ApiKeyRow, String)> = api_keys::table
            .inner_join(
                memberships::table.on(memberships::workspace_id
                    .eq(api_keys::workspace_id)
                    .and(memberships::user_id.eq(api_keys::user_id))),
            )
            .filter(api_keys::key_hash.eq(&hash.0[..]))
            .filter(api_keys::revoked_at.is_null())
            .select((ApiKeyRow::as_select(), memberships::role))
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "looking up an API key"))?;
        found
            .map(|(row, role)| {
                let role = Role::parse(&role).map_err(|e| {
                    DomainError::Unexpected(anyhow::anyhow!("stored membership role: {e}"))
                })?;
                Ok((ApiKey::from(row), role))
            })
            .transpose()
    }

    async fn active_hashes(&self) -> DomainResult<Vec<KeyHash>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let hashes: Vec<Vec<u8>> = api_keys::table
            .filter(api_keys::revoked_at.is_null())
            .select(api_keys::key_hash)
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "reading the active API keys"))?;
        Ok(hashes
            .into_iter()
            .filter_map(|h| <[u8; 32]>::try_from(h).ok().map(KeyHash))
            .collect())
    }

    async fn record_use(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        diesel::update(api_keys::table.find(id.0))
            .set(api_keys::last_used_at.eq(at))
            .execute(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "recording an API key's use"))?;
        Ok(())
    }

    async fn revoke(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<ApiKey> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::update(
                    api_keys::table
                        .find(id.0)
                        .filter(api_keys::revoked_at.is_null()),
                )
                .set(api_keys::revoked_at.eq(at))
                .execute(conn)
                .await?;
                // A revoked credential must not keep data flowing out.
                disable_webhooks_of(conn, id.0, at).await?;
                api_keys::table
                    .find(id.0)
                    .select(ApiKeyRow::as_select())
                    .first(conn)
                    .await
                    .optional()
            })
            .await
            .map_err(|e| map_db_error(e, "revoking an API key"))?;
        row.map(ApiKey::from)
            .ok_or(DomainError::NotFound("api key"))
    }

    async fn get(&self, id: ApiKeyId) -> DomainResult<Option<ApiKey>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = api_keys::table
            .find(id.0)
            .select(ApiKeyRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading an API key"))?;
        Ok(row.map(ApiKey::from))
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        user: Option<UserId>,
    ) -> DomainResult<Vec<ApiKey>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = api_keys::table
            .filter(api_keys::workspace_id.eq(workspace.0))
            .select(ApiKeyRow::as_select())
            .order((api_keys::created_at.desc(), api_keys::id.desc()))
            .into_boxed();
        if let Some(user) = user {
            query = query.filter(api_keys::user_id.eq(user.0));
        }
        let rows = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing API keys"))?;
        Ok(rows.into_iter().map(ApiKey::from).collect())
    }

    async fn disable_webhooks_of_expired(&self, now: OffsetDateTime) -> DomainResult<u64> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // The expired keys that still have an active subscription: few, and none most of the time.
        let expired: Vec<Uuid> = api_keys::table
            .filter(api_keys::expires_at.le(now))
            .filter(diesel::dsl::exists(
                webhook_subscriptions::table
                    .filter(webhook_subscriptions::api_key_id.eq(api_keys::id))
                    .filter(webhook_subscriptions::status.eq("ACTIVE")),
            ))
            .select(api_keys::id)
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "finding expired API keys"))?;
        let mut disabled = 0;
        for key in expired {
            disabled += conn
                .transaction::<_, diesel::result::Error, _>(async |conn| {
                    disable_webhooks_of(conn, key, now).await
                })
                .await
                .map_err(|e| map_db_error(e, "disabling an expired key's webhooks"))?;
        }
        Ok(disabled)
    }
}

/// Disables `key`'s active webhook subscriptions (reason `key_revoked`) and cancels what was
/// queued for them, on `conn` (inside the caller's transaction); how many it disabled.
async fn disable_webhooks_of(
    conn: &mut diesel_async::AsyncPgConnection,
    key: Uuid,
    at: OffsetDateTime,
) -> QueryResult<u64> {
    let disabled = diesel::update(
        webhook_subscriptions::table
            .filter(webhook_subscriptions::api_key_id.eq(key))
            .filter(webhook_subscriptions::status.eq("ACTIVE")),
    )
    .set((
        webhook_subscriptions::status.eq("DISABLED"),
        webhook_subscriptions::disabled_reason.eq("key_revoked"),
        webhook_subscriptions::updated_at.eq(at),
    ))
    .execute(conn)
    .await?;
    // Including what was already queued for them.
    named_query!(
        include_str!("statements/cancel_deliveries_of_key.sql");
        api_key_id: diesel::sql_types::Uuid = key,
        at: diesel::sql_types::Timestamptz = at,
    )
    .execute(conn)
    .await?;
    Ok(disabled as u64)
}
