//! The demo workspace, user and key created on the private cluster's first start.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use timetrack_domain::values::{Email, Name};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timetrack_adapters::PgPool;
use timetrack_domain::services::NewWorkspace;

use super::admin::admin_service;

/// What `demo.json` keeps, so later starts can show the key again.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DemoAccount {
    pub workspace_id: String,
    pub user_id: String,
    pub api_key_id: String,
    pub key: String,
}

/// The demo key that `data_dir/demo.json` records, if any.
pub(crate) fn read_key(data_dir: &Path) -> Option<String> {
    let bytes = fs::read(data_dir.join("demo.json")).ok()?;
    serde_json::from_slice::<DemoAccount>(&bytes)
        .ok()
        .map(|demo| demo.key)
}

/// Creates the demo data unless `data_dir/demo.json` records it already, and returns it.
///
/// The file (mode 0600) holds the plain key of a local development cluster only; the database
/// stores its hash like any other key's.
pub(crate) async fn ensure_demo(data_dir: &Path, pool: &PgPool) -> Result<DemoAccount> {
    let path = data_dir.join("demo.json");
    if let Ok(bytes) = fs::read(&path) {
        return serde_json::from_slice(&bytes)
            .with_context(|| format!("parsing {}", path.display()));
    }
    let admin = admin_service(pool);
    let workspace = admin
        .create_workspace(NewWorkspace::named(Name::parse("name", "Demo workspace")?))
        .await?;
    let user = admin
        .create_user(
            workspace.id,
            Name::parse("name", "Demo User")?,
            Email::parse("demo@example.com")?,
        )
        .await?;
    let (key, secret) = admin
        .create_api_key(user.id, workspace.id, Some(Name::parse("name", "demo")?))
        .await?;
    let account = DemoAccount {
        workspace_id: workspace.id.to_string(),
        user_id: user.id.to_string(),
        api_key_id: key.id.to_string(),
        key: secret.expose().to_owned(),
    };
    let mut file = fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(&serde_json::to_vec_pretty(&account)?)?;
    Ok(account)
}

/// The welcome text printed on stdout when serving on the private cluster.
pub(crate) fn banner(base_url: &str, data_dir: &Path, demo: &DemoAccount) -> String {
    format!(
        "timetrack is listening on {base_url} (private PostgreSQL in {dir}/)\n\
         Demo API key (user demo@example.com, workspace \"Demo workspace\"): {key}\n\
         Try it:\n  curl -s {base_url}/api/me -H 'Authorization: Bearer {key}'\n\
         Console (paste the key): {base_url}/console\n",
        dir = data_dir.display(),
        key = demo.key,
    )
}
