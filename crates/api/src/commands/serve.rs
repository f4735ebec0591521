//! `timetrack serve`: the HTTP API.

use std::io::Write;
use std::sync::Arc;

use actix_web::HttpServer;
use anyhow::{Context, Result};
use timetrack_adapters::{PoolSettings, SystemClock, build_pool};
use timetrack_domain::ratelimit::RatePolicy;
use timetrack_domain::services::WebhookSettings;

use super::{Database, demo};
use crate::app::{AppState, RateLimitStoreKind, RateLimits, StateSettings, build_app};
use crate::config::{GlobalSettings, RateLimitStoreArg, ServeSettings};

pub(super) async fn serve(global: &GlobalSettings, settings: &ServeSettings) -> Result<()> {
    let db = Database::open(global).await?;
    let result = run_server(global, settings, &db).await;
    db.close().await;
    result
}

async fn run_server(
    global: &GlobalSettings,
    settings: &ServeSettings,
    db: &Database,
) -> Result<()> {
    let pool = build_pool(
        db.url(),
        PoolSettings {
            max_size: usize::from(settings.db_pool_size),
            ..PoolSettings::default()
        },
    )?;
    let demo = if db.is_private() {
        Some(demo::ensure_demo(&global.data_dir, &pool).await?)
    } else {
        None
    };
    let state = AppState::new(
        pool,
        Arc::new(SystemClock),
        StateSettings {
            auth_cache_ttl: time::Duration::seconds(i64::from(settings.auth_cache_seconds)),
            webhooks: WebhookSettings {
                allow_private_targets: settings.webhook_allow_private_targets,
                ..WebhookSettings::default()
            },
            rate_limits: RateLimits {
                per_key: RatePolicy {
                    per_minute: settings.rate_limit_per_minute,
                    per_second: settings.rate_limit_per_second,
                },
                auth_failures: RatePolicy {
                    per_minute: settings.auth_failures_per_minute,
                    per_second: u32::MAX,
                },
            },
            rate_limit_store: match settings.rate_limit_store {
                RateLimitStoreArg::Memory => RateLimitStoreKind::Memory,
                RateLimitStoreArg::Postgres => RateLimitStoreKind::Postgres,
            },
            ..StateSettings::default()
        },
    );
    let server = HttpServer::new(move || build_app(state.clone()))
        .bind(&settings.bind)
        .with_context(|| format!("binding {}", settings.bind))?
        .shutdown_timeout(10);
    let addrs = server.addrs();
    let base_url = addrs
        .first()
        .map(|a| format!("http://{a}"))
        .unwrap_or_else(|| format!("http://{}", settings.bind));
    tracing::info!(%base_url, "listening");
    if let Some(demo) = &demo {
        let mut out = std::io::stdout().lock();
        out.write_all(demo::banner(&base_url, &global.data_dir, demo).as_bytes())?;
        out.flush()?;
    }
    // actix stops gracefully on SIGINT and SIGTERM; the private cluster stops after it.
    server.run().await.context("running the HTTP server")?;
    tracing::info!("stopped");
    Ok(())
}
