//! Users and memberships in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{UserId, WorkspaceId};
use timetrack_domain::model::User;
use timetrack_domain::ports::UserRepository;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};
use super::schema::{memberships, users};

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = users, check_for_backend(diesel::pg::Pg))]
struct UserRow {
    id: Uuid,
    name: String,
    email: String,
    created_at: OffsetDateTime,
}

impl From<UserRow> for User {
    fn from(row: UserRow) -> Self {
        Self {
            id: UserId(row.id),
            name: row.name,
            email: row.email,
            created_at: row.created_at,
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = memberships)]
struct MembershipRow {
    workspace_id: Uuid,
    user_id: Uuid,
    created_at: OffsetDateTime,
}

fn membership_error(err: diesel::result::Error) -> DomainError {
    match violated_constraint(&err) {
        Some("memberships_workspace_id_fkey") => DomainError::NotFound("workspace"),
        Some("memberships_user_id_fkey") => DomainError::NotFound("user"),
        Some("memberships_pkey") => {
            DomainError::Conflict("user is already a member of the workspace".into())
        }
        Some("users_email_key") => DomainError::Conflict("e-mail already in use".into()),
        _ => map_db_error(err, "storing a user"),
    }
}

/// [`UserRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgUserRepository {
    pool: PgPool,
}

opaque_debug!(PgUserRepository);

impl PgUserRepository {
    /// The repository on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl UserRepository for PgUserRepository {
    async fn create_member(
        &self,
        user: &User,
        workspace: WorkspaceId,
        at: OffsetDateTime,
    ) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = UserRow {
            id: user.id.0,
            name: user.name.clone(),
            email: user.email.clone(),
            created_at: user.created_at,
        };
        let membership = MembershipRow {
            workspace_id: workspace.0,
            user_id: user.id.0,
            created_at: at,
        };
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::insert_into(users::table)
                .values(&row)
                .execute(conn)
                .await?;
            diesel::insert_into(memberships::table)
                .values(&membership)
                .execute(conn)
                .await?;
            Ok(())
        })
        .await
        .map_err(membership_error)
    }

    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        at: OffsetDateTime,
    ) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        diesel::insert_into(memberships::table)
            .values(&MembershipRow {
                workspace_id: workspace.0,
                user_id: user.0,
                created_at: at,
            })
            .execute(&mut conn)
            .await
            .map_err(membership_error)?;
        Ok(())
    }

    async fn find_by_email(&self, email: &str) -> DomainResult<Option<User>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        users::table
            .filter(
                diesel::dsl::sql::<diesel::sql_types::Bool>("lower(email) = lower(")
                    .bind::<diesel::sql_types::Text, _>(email)
                    .sql(")"),
            )
            .select(UserRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map(|row| row.map(User::from))
            .map_err(|e| map_db_error(e, "finding a user by e-mail"))
    }

    async fn get(&self, id: UserId) -> DomainResult<Option<User>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        users::table
            .find(id.0)
            .select(UserRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map(|row| row.map(User::from))
            .map_err(|e| map_db_error(e, "reading a user"))
    }
}
