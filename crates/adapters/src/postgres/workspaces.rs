//! Workspaces in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::OffsetDateTime;
use timetrack_domain::ids::WorkspaceId;
use timetrack_domain::model::Workspace;
use timetrack_domain::ports::WorkspaceRepository;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::schema::workspaces;

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = workspaces, check_for_backend(diesel::pg::Pg))]
pub(crate) struct WorkspaceRow {
    pub id: Uuid,
    pub name: String,
    pub timezone: String,
    pub currency: String,
    pub created_at: OffsetDateTime,
}

impl From<WorkspaceRow> for Workspace {
    fn from(row: WorkspaceRow) -> Self {
        Self {
            id: WorkspaceId(row.id),
            name: row.name,
            timezone: row.timezone,
            currency: row.currency,
            created_at: row.created_at,
        }
    }
}

/// [`WorkspaceRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgWorkspaceRepository {
    pool: PgPool,
}

opaque_debug!(PgWorkspaceRepository);

impl PgWorkspaceRepository {
    /// The repository on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl WorkspaceRepository for PgWorkspaceRepository {
    async fn create(&self, workspace: &Workspace) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = WorkspaceRow {
            id: workspace.id.0,
            name: workspace.name.clone(),
            timezone: workspace.timezone.clone(),
            currency: workspace.currency.clone(),
            created_at: workspace.created_at,
        };
        diesel::insert_into(workspaces::table)
            .values(&row)
            .execute(&mut conn)
            .await
            .map_err(|e| match violated_constraint(&e) {
                Some("workspaces_pkey") => DomainError::Conflict("workspace exists".into()),
                _ => map_db_error(e, "inserting a workspace"),
            })?;
        Ok(())
    }

    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        workspaces::table
            .find(id.0)
            .select(WorkspaceRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map(|row| row.map(Workspace::from))
            .map_err(|e| map_db_error(e, "reading a workspace"))
    }
}
