//! What `timetrack listen` and the `serve` it listens to share through the data directory: a
//! local certificate authority that `serve` trusts, and the loopback ports where a `listen` runs.
//!
//! The SSRF guard refuses loopback addresses, and a receiver on this machine has no certificate
//! a public root vouches for. So `serve` (on its private cluster) keeps a CA in
//! `<data-dir>/listen/` and trusts it for deliveries; the CA is name-constrained to `127.0.0.1`,
//! `::1` and `localhost`, so even its key vouches for nothing but this machine. A `listen` signs
//! its own certificate with it and registers its port as `<data-dir>/listen/<port>.pid` (holding
//! its pid and the workspace of the key it subscribes with) while it runs; the guard lets a
//! delivery reach `https://127.0.0.1:<port>/` only while that file names a live process, and only
//! a delivery of that workspace (another address, `127.0.0.2` or `[::1]`, never). Whoever can
//! write the data directory can already read the demo key and the key that seals webhook
//! secrets, so the directory is the right boundary.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use timetrack_domain::ids::WorkspaceId;
use timetrack_domain::ports::LocalReceivers;

const CA_CERT: &str = "ca.pem";
const CA_KEY: &str = "ca.key";
const CA_NAME: &str = "timetrack listen (this machine only)";

/// `<data-dir>/listen/`: the local CA and the registered ports.
#[derive(Debug, Clone)]
pub struct ListenDir {
    dir: PathBuf,
}

/// A certificate and its key for a local receiver, both PEM.
#[derive(Debug, Clone)]
pub struct LocalCertificate {
    /// The certificate, for `127.0.0.1`, `::1` and `localhost`.
    pub cert_pem: String,
    /// Its PKCS #8 private key.
    pub key_pem: String,
}

impl ListenDir {
    /// The directory under `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.join("listen"),
        }
    }

    /// The CA's certificate file, made with its key on first use (the key readable by its owner
    /// only); what `serve` adds to the roots it trusts for deliveries.
    pub fn ensure_ca(&self) -> Result<PathBuf> {
        let cert_path = self.dir.join(CA_CERT);
        let key_path = self.dir.join(CA_KEY);
        if cert_path.exists() && key_path.exists() {
            return Ok(cert_path);
        }
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let key = rcgen::KeyPair::generate().context("making the local CA's key")?;
        let cert = ca_params()?
            .self_signed(&key)
            .context("making the local CA")?;
        write_private(&key_path, &key.serialize_pem())?;
        std::fs::write(&cert_path, cert.pem())
            .with_context(|| format!("writing {}", cert_path.display()))?;
        Ok(cert_path)
    }

    /// A new certificate for `127.0.0.1`, `::1` and `localhost`, signed by the CA. Fails, saying
    /// so, when no `serve` has made the CA here yet.
    pub fn issue(&self) -> Result<LocalCertificate> {
        let key_path = self.dir.join(CA_KEY);
        let ca_key = std::fs::read_to_string(&key_path).with_context(|| {
            format!(
                "no local CA in {} (a `timetrack serve` on this data directory makes it when it \
                 starts on its private cluster)",
                self.dir.display()
            )
        })?;
        let ca_key = rcgen::KeyPair::from_pem(&ca_key)
            .with_context(|| format!("reading {}", key_path.display()))?;
        let issuer = rcgen::Issuer::new(ca_params()?, ca_key);
        let key = rcgen::KeyPair::generate().context("making a receiver key")?;
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .context("receiver certificate")?;
        params.subject_alt_names.extend([
            rcgen::SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            rcgen::SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ]);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "timetrack listen");
        let cert = params
            .signed_by(&key, &issuer)
            .context("signing the receiver certificate")?;
        Ok(LocalCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Registers `port` as a local receiver of this process, for the deliveries of `workspace`,
    /// until the guard is dropped.
    pub fn register(&self, port: u16, workspace: WorkspaceId) -> Result<Registration> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let path = self.port_file(port);
        write_private(&path, &format!("{} {}", std::process::id(), workspace.0))?;
        Ok(Registration { path })
    }

    fn port_file(&self, port: u16) -> PathBuf {
        self.dir.join(format!("{port}.pid"))
    }
}

impl LocalReceivers for ListenDir {
    fn receives_at(&self, port: u16, workspace: WorkspaceId) -> bool {
        let Ok(text) = std::fs::read_to_string(self.port_file(port)) else {
            return false;
        };
        // `<pid> <workspace>`; a file without the workspace lets nothing through.
        let mut fields = text.split_whitespace();
        let (Some(pid), Some(registered)) = (fields.next(), fields.next()) else {
            return false;
        };
        registered
            .parse::<uuid::Uuid>()
            .is_ok_and(|id| id == workspace.0)
            && pid
                .parse::<i32>()
                .is_ok_and(|pid| pid > 0 && crate::local_postgres::process_alive(pid))
    }
}

/// A registered port; the registration ends when this is dropped.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The CA's parameters, the same each time (its certificate is made once; a receiver's
/// certificate names it by these): a CA for the loopback addresses and `localhost` only.
fn ca_params() -> Result<rcgen::CertificateParams> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).context("CA")?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, CA_NAME);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    params.name_constraints = Some(rcgen::NameConstraints {
        permitted_subtrees: vec![
            rcgen::GeneralSubtree::DnsName("localhost".to_owned()),
            rcgen::GeneralSubtree::IpAddress(rcgen::CidrSubnet::V4(
                Ipv4Addr::LOCALHOST.octets(),
                [255, 255, 255, 255],
            )),
            rcgen::GeneralSubtree::IpAddress(rcgen::CidrSubnet::V6(
                Ipv6Addr::LOCALHOST.octets(),
                [0xff; 16],
            )),
        ],
        excluded_subtrees: Vec::new(),
    });
    // Fixed dates, so that the parameters, and with them a receiver's issuer, are the same each
    // time.
    params.not_before = rcgen::date_time_ymd(2026, 1, 1);
    params.not_after = rcgen::date_time_ymd(2046, 1, 1);
    Ok(params)
}

/// Writes `text` to `path`, readable and writable by its owner only.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier as _;
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    use super::*;

    fn verifies(verifier: &WebPkiServerVerifier, cert: &CertificateDer<'_>, name: &str) -> bool {
        verifier
            .verify_server_cert(
                cert,
                &[],
                &ServerName::try_from(name.to_owned()).unwrap(),
                &[],
                UnixTime::now(),
            )
            .is_ok()
    }

    #[test]
    fn the_local_ca_vouches_for_this_machine_only_and_ports_are_let_through_while_registered() {
        let tmp = std::env::temp_dir().join(format!("timetrack-listen-{}", uuid::Uuid::new_v4()));
        let dir = ListenDir::new(&tmp);
        let ca = dir.ensure_ca().unwrap();
        let first = std::fs::read(&ca).unwrap();
        dir.ensure_ca().unwrap();
        assert_eq!(std::fs::read(&ca).unwrap(), first, "made once, then kept");
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(&ca).unwrap())
            .unwrap();
        let verifier = WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();

        let leaf = dir.issue().unwrap();
        let leaf = CertificateDer::from_pem_slice(leaf.cert_pem.as_bytes()).unwrap();
        for name in ["127.0.0.1", "::1", "localhost"] {
            assert!(verifies(&verifier, &leaf, name), "{name}");
        }
        assert!(!verifies(&verifier, &leaf, "example.com"));
        // Even a certificate its own key signs for another host is refused: the CA is
        // name-constrained to this machine.
        let key =
            rcgen::KeyPair::from_pem(&std::fs::read_to_string(tmp.join("listen/ca.key")).unwrap())
                .unwrap();
        let issuer = rcgen::Issuer::new(ca_params().unwrap(), key);
        let other_key = rcgen::KeyPair::generate().unwrap();
        for name in ["example.com", "10.0.0.1"] {
            let other = rcgen::CertificateParams::new(vec![name.to_owned()])
                .unwrap()
                .signed_by(&other_key, &issuer)
                .unwrap();
            assert!(!verifies(&verifier, other.der(), name), "{name}");
        }

        let (ours, theirs) = (
            WorkspaceId(uuid::Uuid::from_u128(1)),
            WorkspaceId(uuid::Uuid::from_u128(2)),
        );
        assert!(!dir.receives_at(4431, ours));
        let registration = dir.register(4431, ours).unwrap();
        assert!(dir.receives_at(4431, ours));
        assert!(
            !dir.receives_at(4431, theirs),
            "another workspace's deliveries are not let through"
        );
        assert!(
            !dir.receives_at(4432, ours),
            "another port is not let through"
        );
        drop(registration);
        assert!(
            !dir.receives_at(4431, ours),
            "the registration ends with its guard"
        );
        // A port registered by a process that is gone is not let through, nor one registered
        // without a workspace.
        std::fs::write(
            tmp.join("listen/4433.pid"),
            format!("2147483000 {}", ours.0),
        )
        .unwrap();
        assert!(!dir.receives_at(4433, ours));
        std::fs::write(tmp.join("listen/4434.pid"), std::process::id().to_string()).unwrap();
        assert!(!dir.receives_at(4434, ours));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
