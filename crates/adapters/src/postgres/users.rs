//! Users and memberships in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{UserId, WorkspaceId};
use timetrack_domain::model::{Cursor, ListFilter, Member, Page, PageRequest, Role, User};
use timetrack_domain::ports::{LAST_OWNER, ROLE_CHANGED, UserRepository};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::paging::name_contains;
use super::pool::{PgPool, opaque_debug};
use super::schema::{memberships, users, workspaces};

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

/// Adds a membership with the role asked for, or owner when the workspace has no member yet,
/// and returns the role stored. (Two first members added at once both become owners: a workspace
/// may have several.)
const ADD_MEMBERSHIP: &str = "\
    INSERT INTO memberships (workspace_id, user_id, created_at, updated_at, role) \
    SELECT $1, $2, $3, $3, CASE WHEN EXISTS (SELECT 1 FROM memberships WHERE workspace_id = $1) \
                            THEN $4 ELSE 'owner' END \
    RETURNING role";

#[derive(QueryableByName)]
struct RoleRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    role: String,
}

/// Stores a membership of `user` in `workspace` (see [`ADD_MEMBERSHIP`]).
async fn add_membership(
    conn: &mut diesel_async::AsyncPgConnection,
    workspace: WorkspaceId,
    user: UserId,
    role: Role,
    at: OffsetDateTime,
) -> Result<Role, diesel::result::Error> {
    use diesel::sql_types::{Text, Timestamptz, Uuid as SqlUuid};
    let row: RoleRow = diesel::sql_query(ADD_MEMBERSHIP)
        .bind::<SqlUuid, _>(workspace.0)
        .bind::<SqlUuid, _>(user.0)
        .bind::<Timestamptz, _>(at)
        .bind::<Text, _>(role.as_str())
        .get_result(conn)
        .await?;
    stored_role(&row.role)
}

/// A role as the database spells it (its CHECK allows no other).
fn stored_role(text: &str) -> Result<Role, diesel::result::Error> {
    Role::parse(text).map_err(|e| diesel::result::Error::DeserializationError(e.to_string().into()))
}

/// A member as the members list reads it: the membership joined with its user.
#[derive(Queryable)]
struct MemberRow {
    id: Uuid,
    name: String,
    email: String,
    role: String,
    joined_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

impl TryFrom<MemberRow> for Member {
    type Error = diesel::result::Error;

    fn try_from(row: MemberRow) -> Result<Self, Self::Error> {
        Ok(Member {
            id: UserId(row.id),
            name: row.name,
            email: row.email,
            role: stored_role(&row.role)?,
            joined_at: row.joined_at,
            updated_at: row.updated_at,
        })
    }
}

type MemberColumns = (
    users::id,
    users::name,
    users::email,
    memberships::role,
    memberships::created_at,
    memberships::updated_at,
);

const MEMBER_COLUMNS: MemberColumns = (
    users::id,
    users::name,
    users::email,
    memberships::role,
    memberships::created_at,
    memberships::updated_at,
);

/// `user`'s membership of `workspace`.
async fn read_member(
    conn: &mut diesel_async::AsyncPgConnection,
    workspace: WorkspaceId,
    user: UserId,
) -> Result<Option<Member>, diesel::result::Error> {
    memberships::table
        .inner_join(users::table)
        .filter(memberships::workspace_id.eq(workspace.0))
        .filter(memberships::user_id.eq(user.0))
        .select(MEMBER_COLUMNS)
        .first::<MemberRow>(conn)
        .await
        .optional()?
        .map(Member::try_from)
        .transpose()
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
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Role> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = UserRow {
            id: user.id.0,
            name: user.name.clone(),
            email: user.email.clone(),
            created_at: user.created_at,
        };
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::insert_into(users::table)
                .values(&row)
                .execute(conn)
                .await?;
            add_membership(conn, workspace, user.id, role, at).await
        })
        .await
        .map_err(membership_error)
    }

    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Role> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        add_membership(&mut conn, workspace, user, role, at)
            .await
            .map_err(membership_error)
    }

    async fn members(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page_req: PageRequest,
    ) -> DomainResult<Page<Member>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = memberships::table
            .inner_join(users::table)
            .filter(memberships::workspace_id.eq(workspace.0))
            .order((memberships::created_at.asc(), memberships::user_id.asc()))
            .limit(i64::from(page_req.limit) + 1)
            .select(MEMBER_COLUMNS)
            .into_boxed();
        if let Some(after) = page_req.after {
            query = query.filter(
                diesel::dsl::sql::<diesel::sql_types::Bool>(
                    "(memberships.created_at, memberships.user_id) > (",
                )
                .bind::<diesel::sql_types::Timestamptz, _>(after.created_at)
                .sql(", ")
                .bind::<diesel::sql_types::Uuid, _>(after.id)
                .sql(")"),
            );
        }
        if let Some(q) = &filter.q {
            query =
                query.filter(name_contains("users.name", q).or(name_contains("users.email", q)));
        }
        if let Some(since) = filter.updated_since {
            query = query.filter(memberships::updated_at.ge(since));
        }
        let rows: Vec<MemberRow> = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing members"))?;
        let members = rows
            .into_iter()
            .map(Member::try_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| map_db_error(e, "listing members"))?;
        Ok(Page::from_overfetch(members, page_req.limit, |m| Cursor {
            created_at: m.joined_at,
            id: m.id.0,
        }))
    }

    async fn member(&self, workspace: WorkspaceId, user: UserId) -> DomainResult<Option<Member>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        read_member(&mut conn, workspace, user)
            .await
            .map_err(|e| map_db_error(e, "reading a member"))
    }

    async fn set_role(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        expected: Option<Role>,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Member> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // Role changes of one workspace take turns on its row, so two owners unmaking each other
        // at once cannot both pass the count.
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let found: Option<Uuid> = workspaces::table
                .find(workspace.0)
                .select(workspaces::id)
                .for_no_key_update()
                .first(conn)
                .await
                .optional()?;
            if found.is_none() {
                return Ok(Err(DomainError::NotFound("member")));
            }
            let Some(member) = read_member(conn, workspace, user).await? else {
                return Ok(Err(DomainError::NotFound("member")));
            };
            if expected.is_some_and(|e| e != member.role) {
                return Ok(Err(DomainError::Conflict(ROLE_CHANGED.into())));
            }
            if member.role == Role::Owner && role != Role::Owner {
                let owners: i64 = memberships::table
                    .filter(memberships::workspace_id.eq(workspace.0))
                    .filter(memberships::role.eq(Role::Owner.as_str()))
                    .count()
                    .get_result(conn)
                    .await?;
                if owners <= 1 {
                    return Ok(Err(DomainError::Conflict(LAST_OWNER.into())));
                }
            }
            diesel::update(memberships::table.find((workspace.0, user.0)))
                .set((
                    memberships::role.eq(role.as_str()),
                    memberships::updated_at.eq(at),
                ))
                .execute(conn)
                .await?;
            Ok(Ok(Member {
                role,
                updated_at: at,
                ..member
            }))
        })
        .await
        .map_err(|e| map_db_error(e, "changing a role"))?
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
