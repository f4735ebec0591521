//! A real browser for the console's tests: Debian's Chromium, installed on first use when it is
//! missing and this process may install packages.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Where Chromium may already be.
const CANDIDATES: &[&str] = &["/usr/bin/chromium", "/usr/bin/chromium-browser"];

fn found() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TIMETRACK_TEST_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

fn apt_get(args: &[&str]) -> std::process::Output {
    Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .unwrap_or_else(|e| panic!("apt-get is needed to install chromium: {e}"))
}

/// The path of a Chromium binary (`TIMETRACK_TEST_CHROMIUM`, else Debian's), installing Debian's
/// `chromium` package with apt-get when there is none (as root; otherwise it panics saying so).
pub fn chromium() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = found() {
            return path;
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
        assert!(
            root,
            "the console's browser test needs Chromium: install Debian's `chromium` package \
             (or set TIMETRACK_TEST_CHROMIUM to a Chromium binary)"
        );
        let mut out = apt_get(&["install", "-y", "-qq", "chromium"]);
        if !out.status.success() {
            // A fresh machine's package lists may be missing or stale.
            let _ = apt_get(&["update", "-qq"]);
            out = apt_get(&["install", "-y", "-qq", "chromium"]);
        }
        assert!(
            out.status.success(),
            "installing chromium: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        found().expect("chromium is installed but not found in /usr/bin")
    })
    .clone()
}
