//! The Zapier app's own test suite (`integrations/zapier`, Zapier's `zapier-platform-core` test
//! tools under node's test runner), run against this build's `timetrack` binary, after its
//! definition is validated with `zapier-platform-schema`. The suite starts the server on a
//! private cluster and an HTTPS receiver itself (its `test/harness.js`).

use std::path::Path;
use std::process::Command;

use super::BIN;

/// `npm <args>` in the app's directory; panics with its output unless it succeeds.
fn npm(app: &Path, args: &[&str]) -> String {
    let out = Command::new("npm")
        .args(args)
        .current_dir(app)
        .env("TIMETRACK_BIN", BIN)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap_or_else(|e| panic!("npm is needed for the Zapier app's tests: {e}"));
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "npm {}:\n{text}", args.join(" "));
    text
}

#[test]
fn the_zapier_app_validates_and_passes_its_own_tests_against_this_binary() {
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/zapier");
    npm(&app, &["ci", "--no-audit", "--no-fund", "--loglevel=error"]);
    let validated = npm(&app, &["run", "--silent", "validate"]);
    assert!(
        validated.contains("The app definition is valid"),
        "{validated}"
    );
    let tested = npm(&app, &["test"]);
    assert!(tested.contains("# fail 0"), "{tested}");
    assert!(!tested.contains("# pass 0\n"), "{tested}");
}
