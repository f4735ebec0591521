//! Name resolution through the system resolver, bounded in time, for the SSRF guard.

use std::net::IpAddr;
use std::time::Duration;

use async_trait::async_trait;
use timetrack_domain::ports::HostResolver;

/// Resolves with `tokio::net::lookup_host`, giving up after `timeout`.
#[derive(Debug, Clone, Copy)]
pub struct SystemResolver {
    timeout: Duration,
}

impl SystemResolver {
    /// A resolver that gives up after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

impl Default for SystemResolver {
    fn default() -> Self {
        Self::new(Duration::from_secs(2))
    }
}

#[async_trait]
impl HostResolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
        let lookup = tokio::net::lookup_host((host, port));
        match tokio::time::timeout(self.timeout, lookup).await {
            Ok(Ok(addresses)) => {
                let mut ips: Vec<IpAddr> = addresses.map(|a| a.ip()).collect();
                ips.dedup();
                if ips.is_empty() {
                    Err(format!("{host}: no addresses"))
                } else {
                    Ok(ips)
                }
            }
            Ok(Err(err)) => Err(format!("{host}: {err}")),
            Err(_) => Err(format!("{host}: resolution timed out")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn localhost_resolves_to_loopback_and_nonsense_does_not_resolve() {
        let resolver = SystemResolver::default();
        let ips = resolver.resolve("localhost", 443).await.unwrap();
        assert!(ips.iter().all(IpAddr::is_loopback), "{ips:?}");
        assert!(resolver.resolve("no-such-host.invalid", 443).await.is_err());
    }
}
