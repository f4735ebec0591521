//! Debian tools the tests drive: Chromium for the console's tests, `pdftotext` (poppler-utils)
//! for the invoice PDFs, PgBouncer for the service behind a transaction pooler. Each is installed on first use when it is missing and this process may
//! install packages.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// A Debian tool: where it may be, the variable that may name it, its package.
struct Tool {
    candidates: &'static [&'static str],
    variable: &'static str,
    package: &'static str,
    needed_by: &'static str,
}

impl Tool {
    fn found(&self) -> Option<PathBuf> {
        if let Some(path) = std::env::var_os(self.variable) {
            return Some(PathBuf::from(path));
        }
        self.candidates
            .iter()
            .map(PathBuf::from)
            .find(|path| path.exists())
    }

    fn apt_get(&self, args: &[&str]) -> std::process::Output {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .unwrap_or_else(|e| panic!("apt-get is needed to install {}: {e}", self.package))
    }

    /// The tool's path, installing its package with apt-get when it is missing (as root;
    /// otherwise it panics saying what to install).
    fn path(&self) -> PathBuf {
        if let Some(path) = self.found() {
            return path;
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
        assert!(
            root,
            "{} needs Debian's `{}` package (or {} naming the binary)",
            self.needed_by, self.package, self.variable
        );
        let install = ["install", "-y", "-qq", self.package];
        let mut out = self.apt_get(&install);
        if !out.status.success() {
            // A fresh machine's package lists may be missing or stale.
            let _ = self.apt_get(&["update", "-qq"]);
            out = self.apt_get(&install);
        }
        assert!(
            out.status.success(),
            "installing {}: {}",
            self.package,
            String::from_utf8_lossy(&out.stderr)
        );
        self.found()
            .unwrap_or_else(|| panic!("{} is installed but not found", self.package))
    }
}

/// The path of a Chromium binary (`TIMETRACK_TEST_CHROMIUM`, else Debian's), installing Debian's
/// `chromium` package with apt-get when there is none (as root; otherwise it panics saying so).
pub fn chromium() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        Tool {
            candidates: &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
            variable: "TIMETRACK_TEST_CHROMIUM",
            package: "chromium",
            needed_by: "the console's browser test",
        }
        .path()
    })
    .clone()
}

/// The path of `pdftotext` (`TIMETRACK_TEST_PDFTOTEXT`, else Debian's), installing Debian's
/// `poppler-utils` with apt-get when there is none (as root; otherwise it panics saying so).
pub fn pdftotext() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        Tool {
            candidates: &["/usr/bin/pdftotext"],
            variable: "TIMETRACK_TEST_PDFTOTEXT",
            package: "poppler-utils",
            needed_by: "the invoice PDF tests",
        }
        .path()
    })
    .clone()
}

/// The path of `pgbouncer` (`TIMETRACK_TEST_PGBOUNCER`, else Debian's), installing Debian's
/// `pgbouncer` package with apt-get when there is none (as root; otherwise it panics saying so).
pub fn pgbouncer() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        Tool {
            candidates: &["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"],
            variable: "TIMETRACK_TEST_PGBOUNCER",
            package: "pgbouncer",
            needed_by: "the tests behind PgBouncer",
        }
        .path()
    })
    .clone()
}
