//! What a scenario finds: checks that pass or fail, and figures for the report.

use std::fmt::Write as _;

pub use timetrack_testkit::percentile;

/// One verified statement.
#[derive(Debug, Clone)]
pub struct Check {
    /// What must hold, in words.
    pub what: String,
    /// Whether it held.
    pub ok: bool,
    /// What was seen.
    pub seen: String,
}

/// The outcome of one scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name on the command line and in the report.
    pub name: &'static str,
    /// Its heading in the report.
    pub title: &'static str,
    /// Its checks, in order.
    pub checks: Vec<Check>,
    /// Figures for the report: label and value.
    pub figures: Vec<(String, String)>,
    /// Set when the scenario could not run to its end; the reason.
    pub aborted: Option<String>,
}

impl Scenario {
    /// An empty outcome.
    pub fn new(name: &'static str, title: &'static str) -> Self {
        Self {
            name,
            title,
            checks: Vec::new(),
            figures: Vec::new(),
            aborted: None,
        }
    }

    /// Records that `what` held (or not), with what was seen; prints it at once.
    pub fn check(&mut self, what: impl Into<String>, ok: bool, seen: impl Into<String>) -> bool {
        let check = Check {
            what: what.into(),
            ok,
            seen: seen.into(),
        };
        let mark = if ok { "ok  " } else { "FAIL" };
        say(&format!("  [{mark}] {} ({})", check.what, check.seen));
        self.checks.push(check);
        ok
    }

    /// Records that `seen` equals `expected`.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "call sites pass counts and literals"
    )]
    pub fn check_eq<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: impl Into<String>,
        seen: T,
        expected: T,
    ) -> bool {
        let ok = seen == expected;
        let text = if ok {
            format!("{seen:?}")
        } else {
            format!("{seen:?}, expected {expected:?}")
        };
        self.check(what, ok, text)
    }

    /// Adds a figure to the report.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "call sites pass counts and literals"
    )]
    pub fn figure(&mut self, label: impl Into<String>, value: impl ToString) {
        self.figures.push((label.into(), value.to_string()));
    }

    /// Passed checks and failed checks (an aborted scenario counts one more failure).
    pub fn tally(&self) -> (usize, usize) {
        let passed = self.checks.iter().filter(|c| c.ok).count();
        let failed = self.checks.len() - passed + usize::from(self.aborted.is_some());
        (passed, failed)
    }

    /// The scenario as a Markdown section.
    pub fn markdown(&self) -> String {
        let (passed, failed) = self.tally();
        let mut out = format!("### {}\n\n", self.title);
        if let Some(reason) = &self.aborted {
            let _ = writeln!(out, "**Stopped early:** {}\n", reason.replace('\n', " "));
        }
        if !self.figures.is_empty() {
            out.push_str("| figure | value |\n|---|---|\n");
            for (label, value) in &self.figures {
                let _ = writeln!(out, "| {label} | {value} |");
            }
            out.push('\n');
        }
        let _ = writeln!(out, "Checks: {passed} passed, {failed} failed.\n");
        out.push_str("| check | seen | result |\n|---|---|---|\n");
        for c in &self.checks {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                c.what.replace('|', "\\|"),
                c.seen.replace('|', "\\|").replace('\n', " "),
                if c.ok { "pass" } else { "**FAIL**" }
            );
        }
        out
    }
}

/// Records that `canary` saw no connection and no request: nothing was sent where it must not be.
pub fn check_canary_untouched(s: &mut Scenario, canary: &timetrack_testkit::HttpsReceiver) {
    s.check(
        "the canary got no connection and no request",
        canary.accepts() == 0 && canary.count() == 0,
        format!(
            "{} connections, {} requests",
            canary.accepts(),
            canary.count()
        ),
    );
}

/// One line of progress on stderr.
pub fn say(line: &str) {
    // Under `cargo test`, through the macro the test harness captures (shown for a failing test
    // only); in the tool, straight to stderr, ignoring a closed stream.
    #[cfg(test)]
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{line}");
    }
    #[cfg(not(test))]
    {
        use std::io::Write as _;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }
}

/// At most `max` characters of `text`, with `...` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}...", text.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_and_an_abort_both_count_as_failures() {
        let mut s = Scenario::new("x", "X");
        assert!(s.check_eq("one", 1, 1));
        assert!(!s.check_eq("two", 2, 3));
        s.aborted = Some("stopped".to_owned());
        assert_eq!(s.tally(), (1, 2));
        let md = s.markdown();
        assert!(md.contains("| two | 2, expected 3 | **FAIL** |"), "{md}");
        assert!(md.contains("**Stopped early:** stopped"), "{md}");
    }
}
