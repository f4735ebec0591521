//! Idempotency keys in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{ApiKeyId, WorkspaceId};
use timetrack_domain::ports::{
    IDEMPOTENCY_RETENTION, IdempotencyBegin, IdempotencyStore, STALE_CLAIM,
};
use timetrack_domain::{DomainError, DomainResult};

use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::schema::idempotency_keys;
use crate::secrets::{Purpose, SecretBox};

/// [`IdempotencyStore`] on PostgreSQL.
#[derive(Clone)]
pub struct PgIdempotencyStore {
    pool: PgPool,
    secrets: SecretBox,
}

opaque_debug!(PgIdempotencyStore);

impl PgIdempotencyStore {
    /// The store on `pool`; responses are stored sealed by `secrets` (a subscribe's carries
    /// its signing secret).
    pub fn new(pool: PgPool, secrets: SecretBox) -> Self {
        Self { pool, secrets }
    }
}

#[async_trait]
impl IdempotencyStore for PgIdempotencyStore {
    async fn begin(
        &self,
        workspace: WorkspaceId,
        api_key: ApiKeyId,
        key: &str,
        fingerprint: [u8; 32],
        now: OffsetDateTime,
    ) -> DomainResult<IdempotencyBegin> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let key = key.to_owned();
        let begun = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let mine = idempotency_keys::table
                    .filter(idempotency_keys::api_key_id.eq(api_key.0))
                    .filter(idempotency_keys::key.eq(&key));
                diesel::delete(
                    mine.filter(
                        idempotency_keys::created_at
                            .lt(now - IDEMPOTENCY_RETENTION)
                            .or(idempotency_keys::status
                                .is_null()
                                .and(idempotency_keys::created_at.lt(now - STALE_CLAIM))),
                    ),
                )
                .execute(conn)
                .await?;
                let inserted = diesel::insert_into(idempotency_keys::table)
                    .values((
                        idempotency_keys::workspace_id.eq(workspace.0),
                        idempotency_keys::api_key_id.eq(api_key.0),
                        idempotency_keys::key.eq(&key),
                        idempotency_keys::fingerprint.eq(&fingerprint[..]),
                        idempotency_keys::created_at.eq(now),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
                if inserted == 1 {
                    return Ok(IdempotencyBegin::Started);
                }
                let (stored, status, body): (Vec<u8>, Option<i32>, Option<String>) = mine
                    .select((
                        idempotency_keys::fingerprint,
                        idempotency_keys::status,
                        idempotency_keys::body,
                    ))
                    .first(conn)
                    .await?;
                Ok(match (stored == fingerprint, status, body) {
                    (false, _, _) => IdempotencyBegin::Mismatch,
                    (true, Some(status), Some(body)) => IdempotencyBegin::Replay {
                        status: u16::try_from(status).unwrap_or(500),
                        body,
                    },
                    (true, _, _) => IdempotencyBegin::InProgress,
                })
            })
            .await
            .map_err(|e| map_db_error(e, "claiming an idempotency key"))?;
        Ok(match begun {
            IdempotencyBegin::Replay { status, body } => IdempotencyBegin::Replay {
                status,
                body: self
                    .secrets
                    .open(Purpose::IdempotentResponse, &body)
                    .map_err(DomainError::Unexpected)?,
            },
            other => other,
        })
    }

    async fn complete(
        &self,
        api_key: ApiKeyId,
        key: &str,
        status: u16,
        body: &str,
    ) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        diesel::update(
            idempotency_keys::table
                .filter(idempotency_keys::api_key_id.eq(api_key.0))
                .filter(idempotency_keys::key.eq(key)),
        )
        .set((
            idempotency_keys::status.eq(i32::from(status)),
            idempotency_keys::body.eq(self.secrets.seal(Purpose::IdempotentResponse, body)),
        ))
        .execute(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "storing an idempotent response"))?;
        Ok(())
    }

    async fn abandon(&self, api_key: ApiKeyId, key: &str) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        diesel::delete(
            idempotency_keys::table
                .filter(idempotency_keys::api_key_id.eq(api_key.0))
                .filter(idempotency_keys::key.eq(key))
                .filter(idempotency_keys::status.is_null()),
        )
        .execute(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "releasing an idempotency key"))?;
        Ok(())
    }
}
