//! `timetrack admin ...`: each command prints the created or changed record as one JSON object.

use std::sync::Arc;
use timetrack_domain::values::{Currency, Email, Name, TimeZoneName};

use anyhow::Result;
use serde::Serialize;
use timetrack_adapters::postgres::{PgApiKeyRepository, PgUserRepository, PgWorkspaceRepository};
use timetrack_adapters::{OsRandom, PgPool, PoolSettings, SystemClock, UuidV7Ids, build_pool};
use timetrack_domain::ids::{ApiKeyId, UserId, WorkspaceId};
use timetrack_domain::model::{ApiKey, ApiKeySecret, Role, User};
use timetrack_domain::services::{AdminService, NewWorkspace};

use super::{Database, print_json};
use crate::config::{AdminCommand, GlobalSettings};

/// The admin service on PostgreSQL with the system clock, ids and randomness.
pub(crate) fn admin_service(pool: &PgPool) -> AdminService {
    AdminService::new(
        Arc::new(PgWorkspaceRepository::new(pool.clone())),
        Arc::new(PgUserRepository::new(pool.clone())),
        Arc::new(PgApiKeyRepository::new(pool.clone())),
        Arc::new(SystemClock),
        Arc::new(UuidV7Ids),
        Arc::new(OsRandom),
    )
}

/// A user as `create-user` prints it.
#[derive(Debug, Serialize)]
pub(crate) struct UserOutput {
    #[serde(flatten)]
    pub user: User,
    pub workspace_id: WorkspaceId,
    pub role: Role,
}

/// A membership as `set-role` prints it.
#[derive(Debug, Serialize)]
pub(crate) struct MemberOutput {
    pub id: UserId,
    pub name: String,
    pub email: String,
    pub role: Role,
    pub workspace_id: WorkspaceId,
}

/// A new key as `create-api-key` prints it: the only time the key is shown.
#[derive(Debug, Serialize)]
pub(crate) struct NewKeyOutput {
    pub id: ApiKeyId,
    pub key: String,
    pub name: Option<String>,
    pub prefix: String,
    pub user_id: UserId,
    pub workspace_id: WorkspaceId,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
}

impl NewKeyOutput {
    pub(crate) fn new(key: ApiKey, secret: &ApiKeySecret) -> Self {
        Self {
            id: key.id,
            key: secret.expose().to_owned(),
            name: key.name,
            prefix: key.prefix,
            user_id: key.user_id,
            workspace_id: key.workspace_id,
            created_at: key.created_at,
        }
    }
}

pub(super) async fn run(settings: &GlobalSettings, command: AdminCommand) -> Result<()> {
    let db = Database::open(settings).await?;
    let pool = build_pool(db.url(), db.pool_settings(PoolSettings::default().max_size))?;
    let result = execute(&admin_service(&pool), command).await;
    drop(pool);
    db.close().await;
    result
}

async fn execute(admin: &AdminService, command: AdminCommand) -> Result<()> {
    match command {
        AdminCommand::CreateWorkspace {
            name,
            timezone,
            currency,
        } => {
            let workspace = admin
                .create_workspace(NewWorkspace {
                    name: Name::parse("name", &name)?,
                    timezone: Some(TimeZoneName::parse(&timezone)?),
                    currency: Some(Currency::parse(&currency)?),
                })
                .await?;
            print_json(&workspace)
        }
        AdminCommand::CreateUser {
            workspace,
            name,
            email,
            role,
        } => {
            let workspace_id = WorkspaceId(workspace);
            let (name, email) = (Name::parse("name", &name)?, Email::parse(&email)?);
            let role = Role::parse(&role)?;
            let (user, role) = admin
                .create_user_as(workspace_id, name, email, role)
                .await?;
            print_json(&UserOutput {
                user,
                workspace_id,
                role,
            })
        }
        AdminCommand::SetRole {
            workspace,
            user,
            role,
        } => {
            let member = admin
                .set_role(WorkspaceId(workspace), UserId(user), Role::parse(&role)?)
                .await?;
            print_json(&MemberOutput {
                id: member.id,
                name: member.name,
                email: member.email,
                role: member.role,
                workspace_id: WorkspaceId(workspace),
            })
        }
        AdminCommand::CreateApiKey {
            user,
            workspace,
            name,
        } => {
            let name = name.map(|n| Name::parse("name", &n)).transpose()?;
            let (key, secret) = admin
                .create_api_key(UserId(user), WorkspaceId(workspace), name)
                .await?;
            print_json(&NewKeyOutput::new(key, &secret))
        }
        AdminCommand::RevokeApiKey { id } => print_json(&admin.revoke_api_key(ApiKeyId(id)).await?),
    }
}
