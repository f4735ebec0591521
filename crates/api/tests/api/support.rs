//! A test application on its own database, with one workspace, user and key.

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test;
use serde_json::Value;
use timetrack_adapters::postgres::{PgApiKeyRepository, PgUserRepository, PgWorkspaceRepository};
use timetrack_adapters::{OsRandom, PgPool, SystemClock, UuidV7Ids};
use timetrack_api::{AppState, RateLimits, StateSettings, build_app};
use timetrack_domain::model::{ApiKey, Role, User, Workspace};
use timetrack_domain::ratelimit::RatePolicy;
use timetrack_domain::services::{AdminService, NewWorkspace};
use timetrack_domain::values::{Currency, TimeZoneName};
use timetrack_testkit::TestDatabase;
use timetrack_testkit::fakes::{email, name};

pub struct TestApp {
    /// Keeps the test's database alive (it is dropped with the app).
    db: TestDatabase,
    pub pool: PgPool,
    pub admin: AdminService,
    pub state: AppState,
    pub workspace: Workspace,
    pub user: User,
    pub key: ApiKey,
    pub secret: String,
}

impl TestApp {
    /// An app with limits high enough that only the rate-limit tests meet them.
    pub async fn new() -> Self {
        Self::with_settings(Self::relaxed()).await
    }

    /// Default settings with rate limits lifted.
    pub fn relaxed() -> StateSettings {
        let lifted = RatePolicy {
            per_minute: 1_000_000,
            per_second: 1_000_000,
        };
        StateSettings {
            rate_limits: RateLimits {
                per_key: lifted,
                auth_failures: lifted,
            },
            ..StateSettings::default()
        }
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
                name: name("Acme"),
                timezone: Some(TimeZoneName::parse("Europe/Berlin").unwrap()),
                currency: Some(Currency::parse("EUR").unwrap()),
            })
            .await
            .unwrap();
        let user = admin
            .create_user(workspace.id, name("Ada Lovelace"), email("ada@example.com"))
            .await
            .unwrap();
        let (key, secret) = admin
            .create_api_key(user.id, workspace.id, Some(name("tests")))
            .await
            .unwrap();
        let state = AppState::new(pool.clone(), Arc::new(SystemClock), settings);
        Self {
            db,
            pool: pool.clone(),
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

    /// The test's own database.
    pub fn db(&self) -> &TestDatabase {
        &self.db
    }

    pub fn bearer(&self) -> (&'static str, String) {
        ("Authorization", self.key())
    }

    /// The `Authorization` value of the test's own key (its workspace's owner).
    pub fn key(&self) -> String {
        format!("Bearer {}", self.secret)
    }

    /// A second workspace with its own member and key: (workspace, bearer header value).
    pub async fn other_workspace(&self) -> (Workspace, String) {
        let ws = self
            .admin
            .create_workspace(NewWorkspace::named(name("Other")))
            .await
            .unwrap();
        let user = self
            .admin
            .create_user(ws.id, name("Bob"), email("bob@example.com"))
            .await
            .unwrap();
        let (_, secret) = self
            .admin
            .create_api_key(user.id, ws.id, None)
            .await
            .unwrap();
        (ws, format!("Bearer {}", secret.expose()))
    }

    /// Another person in the test's workspace with `role`, and the bearer header value of a key
    /// of theirs.
    pub async fn colleague(&self, who: &str, role: Role) -> (User, String) {
        let (user, stored) = self
            .admin
            .create_user_as(
                self.workspace.id,
                name(who),
                email(&format!("{}@example.com", who.to_lowercase())),
                role,
            )
            .await
            .unwrap();
        assert_eq!(stored, role);
        let (_, secret) = self
            .admin
            .create_api_key(user.id, self.workspace.id, None)
            .await
            .unwrap();
        (user, format!("Bearer {}", secret.expose()))
    }

    /// Runs SQL and returns the first column of the first row as i64.
    pub async fn scalar(&self, sql: &str) -> i64 {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let mut conn = self.pool.get().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query(sql).load(&mut conn).await.unwrap();
        rows[0].n
    }

    /// The bodies of the workspace events of `event_type`, oldest first.
    pub async fn events(&self, event_type: &str) -> Vec<Value> {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            body: String,
        }
        let mut conn = self.pool.get().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query(
            "SELECT body FROM events WHERE event_type = $1 ORDER BY created_at, id",
        )
        .bind::<diesel::sql_types::Text, _>(event_type)
        .load(&mut conn)
        .await
        .unwrap();
        rows.iter()
            .map(|r| serde_json::from_str(&r.body).unwrap())
            .collect()
    }

    /// The stored body of event `id`.
    pub async fn event_body(&self, id: &str) -> String {
        self.texts(&format!("SELECT body AS t FROM events WHERE id = '{id}'"))
            .await
            .remove(0)
    }

    /// The ids of the `CLIENT_CREATED` events of these clients.
    pub async fn event_ids_of_clients(&self, clients: &[String]) -> Vec<String> {
        let list = clients
            .iter()
            .map(|c| format!("'{c}'"))
            .collect::<Vec<_>>()
            .join(",");
        self.texts(&format!(
            "SELECT id::text AS t FROM events WHERE event_type = 'CLIENT_CREATED' \
             AND client_id IN ({list})"
        ))
        .await
    }

    /// The first column (`t`, text) of every row of `sql`.
    pub async fn texts(&self, sql: &str) -> Vec<String> {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            t: String,
        }
        let mut conn = self.pool.get().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query(sql).load(&mut conn).await.unwrap();
        rows.into_iter().map(|r| r.t).collect()
    }

    /// Runs SQL for its effect.
    pub async fn execute(&self, sql: &str) {
        use diesel_async::RunQueryDsl;
        let mut conn = self.pool.get().await.unwrap();
        diesel::sql_query(sql).execute(&mut conn).await.unwrap();
    }

    /// Inserts a subscription row directly (for outbox tests that precede the subscribe endpoint).
    pub async fn insert_subscription(
        &self,
        id: &str,
        workspace: &Workspace,
        events: &[&str],
        status: &str,
    ) {
        let events = events
            .iter()
            .map(|e| format!("'{e}'"))
            .collect::<Vec<_>>()
            .join(",");
        self.execute(&format!(
            "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, \
             secret, status, disabled_reason, created_at, updated_at) \
             SELECT '{id}', k.workspace_id, k.user_id, k.id, 'https://example.com/hook', \
             ARRAY[{events}], 'whsec_test', '{status}', \
             CASE WHEN '{status}' = 'DISABLED' THEN 'failing' END, now(), now() \
             FROM api_keys k WHERE k.workspace_id = '{}' LIMIT 1",
            workspace.id
        ))
        .await;
    }
}

/// A `method` request to `uri` with `authorization` (a `Bearer ...` value) and, if given, a JSON
/// body.
pub fn keyed(
    method: &str,
    uri: &str,
    authorization: &str,
    body: Option<Value>,
) -> actix_http::Request {
    let req = match method {
        "GET" => test::TestRequest::get(),
        "PATCH" => test::TestRequest::patch(),
        "POST" => test::TestRequest::post(),
        "DELETE" => test::TestRequest::delete(),
        other => panic!("{other}"),
    }
    .uri(uri)
    .insert_header(("Authorization", authorization.to_owned()));
    match body {
        Some(body) => req.set_json(body).to_request(),
        None => req.to_request(),
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

/// An error body reduced to `{"error": ...}`, after checking that anything else in it is a
/// non-empty `detail` string: for comparing published messages exactly.
pub fn error_of(body: &Value) -> Value {
    let object = body.as_object().expect("an error body is an object");
    for (name, value) in object {
        match name.as_str() {
            "error" => assert!(value.is_string(), "{body}"),
            "detail" => assert!(value.as_str().is_some_and(|d| !d.is_empty()), "{body}"),
            other => panic!("unexpected field {other}: {body}"),
        }
    }
    serde_json::json!({ "error": object["error"] })
}

/// The UTC date `days` from today, `YYYY-MM-DD`, from the clock at run time: for dates a test
/// needs on a side of now (a due date still ahead, a lock date after today), which no fixed date
/// stays on for good.
pub fn date_from_today(days: i64) -> String {
    (time::OffsetDateTime::now_utc().date() + time::Duration::days(days)).to_string()
}
