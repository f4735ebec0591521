//! A test application on its own database, with one workspace, user and key.

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test;
use serde_json::Value;
use timetrack_adapters::postgres::{PgApiKeyRepository, PgUserRepository, PgWorkspaceRepository};
use timetrack_adapters::testing::TestDatabase;
use timetrack_adapters::{OsRandom, SystemClock, UuidV7Ids};
use timetrack_api::{AppState, StateSettings, build_app};
use timetrack_domain::model::{ApiKey, User, Workspace};
use timetrack_domain::services::{AdminService, NewWorkspace};

pub struct TestApp {
    /// Keeps the test's database alive (it is dropped with the app).
    _db: TestDatabase,
    pub admin: AdminService,
    pub state: AppState,
    pub workspace: Workspace,
    pub user: User,
    pub key: ApiKey,
    pub secret: String,
}

impl TestApp {
    pub async fn new() -> Self {
        Self::with_settings(StateSettings::default()).await
    }

    pub async fn with_settings(settings: StateSettings) -> Self {
        let db = TestDatabase::new().await;
        let pool = db.pool();
        let admin = AdminService::new(
            Arc::new(PgWorkspaceRepository::new(pool.clone())),
            Arc::new(PgUserRepository::new(pool.clone())),
            Arc::new(PgApiKeyRepository::new(pool.clone())),
            Arc::new(SystemClock),
            Arc::new(UuidV7Ids),
            Arc::new(OsRandom),
        );
        let workspace = admin
            .create_workspace(NewWorkspace {
                name: "Acme".into(),
                timezone: Some("Europe/Berlin".into()),
                currency: Some("EUR".into()),
            })
            .await
            .unwrap();
        let user = admin
            .create_user(workspace.id, "Ada Lovelace", "ada@example.com")
            .await
            .unwrap();
        let (key, secret) = admin
            .create_api_key(user.id, workspace.id, Some("tests"))
            .await
            .unwrap();
        let state = AppState::new(pool, Arc::new(SystemClock), settings);
        Self {
            _db: db,
            admin,
            state,
            workspace,
            user,
            key,
            secret: secret.expose().to_owned(),
        }
    }

    pub async fn service(
        &self,
    ) -> impl Service<
        actix_http::Request,
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
    > {
        test::init_service(build_app(self.state.clone())).await
    }

    pub fn bearer(&self) -> (&'static str, String) {
        ("Authorization", format!("Bearer {}", self.secret))
    }
}

/// Sends `req` and returns the status, the `content-type` and the body as JSON.
pub async fn call<S, B>(app: &S, req: actix_http::Request) -> (u16, String, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = test::call_service(app, req).await;
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = test::read_body(res).await;
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("body is not JSON: {:?}", String::from_utf8_lossy(&bytes)));
    (status, content_type, body)
}
