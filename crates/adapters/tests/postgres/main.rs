//! Adapter tests against a real PostgreSQL, one module per subject: accounts (workspaces, users,
//! keys), migrations and SQL functions, the pool and the private cluster, timers, the delivery
//! queue, client search, announcements and secrets at rest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use time::macros::datetime;
use timetrack_adapters::postgres::{
    PgApiKeyRepository, PgHealthProbe, PgUserRepository, PgWorkspaceRepository,
};
use timetrack_adapters::{Durability, LocalPostgres, PoolSettings, build_pool, run_migrations};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ApiKeyId, WorkspaceId};
use timetrack_domain::ports::{ApiKeyRepository, HealthProbe, UserRepository, WorkspaceRepository};
use timetrack_domain::services::{AdminService, NewWorkspace};
use timetrack_testkit::TestDatabase;
use timetrack_testkit::fakes::{ManualClock, SeededRandom, SequentialIds};

struct Fixture {
    db: TestDatabase,
    admin: AdminService,
    keys: Arc<PgApiKeyRepository>,
    users: Arc<PgUserRepository>,
    workspaces: Arc<PgWorkspaceRepository>,
}

async fn fixture() -> Fixture {
    let db = TestDatabase::new().await;
    let pool = db.pool();
    let workspaces = Arc::new(PgWorkspaceRepository::new(pool.clone()));
    let users = Arc::new(PgUserRepository::new(pool.clone()));
    let keys = Arc::new(PgApiKeyRepository::new(pool));
    let admin = AdminService::new(
        workspaces.clone(),
        users.clone(),
        keys.clone(),
        Arc::new(ManualClock::at(datetime!(2026-03-01 12:00 UTC))),
        Arc::new(SequentialIds::default()),
        Arc::new(SeededRandom::new(9)),
    );
    Fixture {
        db,
        admin,
        keys,
        users,
        workspaces,
    }
}

fn named(name: &str) -> NewWorkspace {
    NewWorkspace::named(timetrack_testkit::fakes::name(name))
}

mod accounts;
mod announcements;
mod client_search;
mod infrastructure;
mod migrations;
mod prepared;
mod pricing;
mod queue;
mod secrets_at_rest;
mod timers;
