//! Name resolution of webhook hosts.

use async_trait::async_trait;

/// Name resolution for the SSRF guard.
#[async_trait]
pub trait HostResolver: Send + Sync {
    /// The addresses of `host`, or a description of why it could not be resolved. MUST return
    /// within its own time bound.
    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<std::net::IpAddr>, String>;
}
