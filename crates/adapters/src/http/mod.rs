//! HTTP: the HTTPS webhook sender, the client of a remote timetrack (its API and its MCP
//! endpoint), and the local HTTPS endpoint of `timetrack listen` with its forwarder.

mod local_receiver;
mod relay;
mod sender;

pub use local_receiver::{Answer, Arrived, Forwarder, Handler, serve_https};
pub use relay::{ApiClient, McpRelay, RelayError};
pub use sender::{HyperWebhookSender, SenderSettings};

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The TLS settings of an outbound client: the system's roots (one rustls cannot use is skipped,
/// as browsers do), plus every certificate of each PEM file of `extra_roots` (a private CA, the
/// local CA of `timetrack listen`, the tests' receiver); ring as the provider, its safe protocol
/// versions. Fails if an extra roots file cannot be read or holds no certificate.
fn client_tls(extra_roots: &[&Path]) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    for path in extra_roots {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .with_context(|| format!("reading extra roots from {}", path.display()))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("parsing extra roots in {}", path.display()))?;
        anyhow::ensure!(!certs.is_empty(), "{} holds no certificate", path.display());
        for cert in certs {
            roots
                .add(cert)
                .with_context(|| format!("adding a root from {}", path.display()))?;
        }
    }
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("TLS protocol versions")?
    .with_root_certificates(roots)
    .with_no_client_auth())
}
