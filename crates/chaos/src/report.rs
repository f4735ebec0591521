//! The suite's figures, written into a Markdown file between two markers so the hand-written
//! text around them stays.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::scenario::Scenario;

const BEGIN: &str = "<!-- chaos:begin -->";
const END: &str = "<!-- chaos:end -->";

/// One run of the suite.
#[derive(Debug)]
pub struct Run<'a> {
    pub started: time::OffsetDateTime,
    pub quick: bool,
    pub seconds: f64,
    pub server_bin: PathBuf,
    pub scenarios: &'a [Scenario],
}

impl Run<'_> {
    fn markdown(&self) -> String {
        let cpus = std::thread::available_parallelism().map_or(0, usize::from);
        let mut md = String::new();
        let _ = writeln!(
            md,
            "Run of {} ({} mode, {:.0} s in all, binary `{}`, {cpus} CPUs).\n",
            self.started
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            if self.quick { "quick" } else { "full" },
            self.seconds,
            self.server_bin.display(),
        );
        md.push_str("| scenario | checks passed | failed |\n|---|---|---|\n");
        for s in self.scenarios {
            let (p, f) = s.tally();
            let _ = writeln!(md, "| {} | {p} | {f} |", s.title);
        }
        md.push('\n');
        for s in self.scenarios {
            md.push_str(&s.markdown());
            md.push('\n');
        }
        md
    }
}

/// Replaces the text between the markers of `path` with the figures of `run`.
pub fn write(path: &Path, run: &Run<'_>) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        bail!("{} has no {BEGIN} … {END} markers", path.display());
    };
    if end < begin {
        bail!("{}: {END} comes before {BEGIN}", path.display());
    }
    let updated = format!(
        "{}{BEGIN}\n{}{}",
        &text[..begin],
        run.markdown(),
        &text[end..]
    );
    std::fs::write(path, updated).with_context(|| format!("writing {}", path.display()))
}
