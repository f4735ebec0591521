//! The requests the read-routing workloads (replica, pooler) drive against two servers in turn:
//! each a closure that sends one request and says whether it was answered with success.

use std::sync::Arc;

use anyhow::Result;
use serde_json::json;
use uuid::Uuid;

use crate::lean::LeanPost;
use crate::setup::Server;

/// One request in flight: whether it was answered with success.
pub type Request = std::pin::Pin<Box<dyn Future<Output = bool> + Send>>;

/// Sends one request each time it is called.
pub type Requests = Arc<dyn Fn() -> Request + Send + Sync>;

/// The summary the replica and pooler workloads ask for: the reports dataset's March by project
/// and day.
const MONTH_SUMMARY: &str =
    "/api/reports/summary?from=2026-03-01&to=2026-03-31&group_by=project,day";

/// The client search of section 3 for `lo` in `workspace`, through `server`.
pub fn search_lo(server: &Server, key: &str, workspace: Uuid) -> Result<Requests> {
    let post = Arc::new(LeanPost::new(
        &server.base,
        "/api/integrations/automation/triggers/clients/find",
        key,
        &json!({"workspace_id": workspace, "name": "lo"}),
    )?);
    Ok(Arc::new(move || {
        let post = post.clone();
        Box::pin(async move { post.send().await })
    }))
}

/// The month summary of section 11 by project and day, through `server`.
pub fn month_summary(server: &Server, key: &str) -> Requests {
    let http = reqwest::Client::new();
    let url = format!("{}{MONTH_SUMMARY}", server.base);
    let key = key.to_owned();
    Arc::new(move || {
        let req = http.get(&url).bearer_auth(&key);
        Box::pin(async move { req.send().await.is_ok_and(|res| res.status().is_success()) })
    })
}
