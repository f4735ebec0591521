//! API keys in PostgreSQL, looked up by the SHA-256 of the key.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{ApiKeyId, UserId, WorkspaceId};
use timetrack_domain::model::{ApiKey, KeyHash, Role};
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
}

impl From<ApiKeyRow> for ApiKey {
    fn from(row: ApiKeyRow) -> Self {
        Self {
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
                diesel::update(
                    webhook_subscriptions::table
                        .filter(webhook_subscriptions::api_key_id.eq(id.0))
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
                    api_key_id: diesel::sql_types::Uuid = id.0,
                    at: diesel::sql_types::Timestamptz = at,
                )
                .execute(conn)
                .await?;
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
}
