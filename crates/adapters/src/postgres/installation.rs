//! What belongs to the installation as a whole: the key of the [`Masks`] that show its delivery
//! ids and feed positions to tenants (ADR 0018).

use diesel::QueryableByName;
use diesel::sql_types::Bytea;
use diesel_async::RunQueryDsl;
use timetrack_domain::DomainResult;
use timetrack_domain::masked::Masks;

use super::errors::{map_db_error, map_pool_error};
use super::pool::PgPool;

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = Bytea)]
    mask_key: Vec<u8>,
}

/// The installation's masks, from the key its migration made (the same in every process on the
/// database). An `Unexpected` error if the row is missing or not 32 bytes, which a migrated
/// database never is.
pub async fn installation_masks(pool: &PgPool) -> DomainResult<Masks> {
    let mut conn = pool.get().await.map_err(map_pool_error)?;
    let row: KeyRow = diesel::sql_query("SELECT mask_key FROM installation")
        .get_result(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "installation key"))?;
    let key: [u8; 32] = row.mask_key.try_into().map_err(|_| {
        timetrack_domain::DomainError::Unexpected(anyhow::anyhow!(
            "the installation's mask key is not 32 bytes"
        ))
    })?;
    Ok(Masks::new(&key))
}
