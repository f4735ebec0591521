//! Outbound HTTP: the HTTPS webhook sender, and the client of a remote timetrack's MCP endpoint.

mod relay;
mod sender;

pub use relay::{McpRelay, RelayError};
pub use sender::{HyperWebhookSender, SenderSettings};

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The TLS settings of an outbound client: the system's roots (one rustls cannot use is skipped,
/// as browsers do), plus every certificate of the PEM file `extra_roots` when given (a private
/// CA, the tests' receiver); ring as the provider, its safe protocol versions. Fails if the extra
/// roots cannot be read or hold no certificate.
fn client_tls(extra_roots: Option<&Path>) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = extra_roots {
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
