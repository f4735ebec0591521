//! The workspace: the unit of tenancy that owns clients, projects, entries and subscriptions.

use serde::Serialize;
use time::{Date, OffsetDateTime};

use crate::error::{DomainError, DomainResult};
use crate::ids::WorkspaceId;

/// A workspace and the defaults its members' data inherits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    /// Identifier.
    pub id: WorkspaceId,
    /// Display name, 1 to 255 characters.
    pub name: String,
    /// IANA time zone name; the `date` of a time entry is its start's date in this zone.
    pub timezone: String,
    /// Default ISO 4217 currency for new clients.
    pub currency: String,
    /// When the workspace was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl Workspace {
    /// The time zone used when none is given.
    pub const DEFAULT_TIMEZONE: &'static str = "UTC";
    /// The currency used when none is given.
    pub const DEFAULT_CURRENCY: &'static str = "USD";
}

/// How durations are rounded when read (reports, prices): per entry, to a step of `minutes`.
/// The stored duration never changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rounding {
    /// The step, 0 to 60 minutes; 0 rounds nothing.
    pub minutes: u8,
    /// Which way a duration between two steps goes.
    pub mode: RoundingMode,
}

/// Which way [`Rounding`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RoundingMode {
    /// To the next step (a started step counts whole).
    Up,
    /// To the step before.
    Down,
    /// To the nearest step, a duration half-way between two going up.
    Nearest,
}

impl RoundingMode {
    /// The mode as the API and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            RoundingMode::Up => "up",
            RoundingMode::Down => "down",
            RoundingMode::Nearest => "nearest",
        }
    }

    /// The mode spelled `value`; a 400 naming the choices otherwise.
    pub fn parse(value: &str) -> DomainResult<Self> {
        [RoundingMode::Up, RoundingMode::Down, RoundingMode::Nearest]
            .into_iter()
            .find(|mode| mode.as_str() == value)
            .ok_or_else(|| {
                DomainError::validation(format!(
                    "rounding.mode must be one of up, down, nearest, got: {value}"
                ))
            })
    }
}

impl Default for Rounding {
    fn default() -> Self {
        Self::NONE
    }
}

impl Rounding {
    /// No rounding.
    pub const NONE: Rounding = Rounding {
        minutes: 0,
        mode: RoundingMode::Nearest,
    };
    /// The longest step.
    pub const MAX_MINUTES: u8 = 60;

    /// A rounding of `minutes` (0 to 60) `mode`.
    pub fn new(minutes: u8, mode: RoundingMode) -> DomainResult<Self> {
        if minutes > Self::MAX_MINUTES {
            return Err(DomainError::validation(format!(
                "rounding.minutes must be between 0 and {}, got: {minutes}",
                Self::MAX_MINUTES
            )));
        }
        Ok(Self { minutes, mode })
    }

    /// `seconds` rounded to the step (none when the step is 0). Integers only: the figures of a
    /// report are sums of these.
    pub fn apply(self, seconds: i64) -> i64 {
        let step = i64::from(self.minutes) * 60;
        if step == 0 || seconds <= 0 {
            return seconds.max(0);
        }
        let below = seconds - seconds % step;
        match self.mode {
            RoundingMode::Down => below,
            RoundingMode::Up if below == seconds => below,
            RoundingMode::Up => below + step,
            RoundingMode::Nearest if (seconds - below) * 2 >= step => below + step,
            RoundingMode::Nearest => below,
        }
    }
}

/// How issued invoices are numbered: text with the tokens `{YYYY}`, `{YY}`, `{MM}` and exactly
/// one `{SEQ:n}` (the workspace's sequence, zero-padded to `n` digits, 1 to 12), at most 64
/// characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct InvoiceNumberPattern(String);

/// A piece of an [`InvoiceNumberPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternPart {
    Text(String),
    Year4,
    Year2,
    Month,
    Seq(usize),
}

impl InvoiceNumberPattern {
    /// The longest pattern, in characters.
    pub const MAX_CHARS: usize = 64;

    /// `value`, if it is a pattern; a 400 saying what is wrong otherwise.
    pub fn parse(value: &str) -> DomainResult<Self> {
        if value.is_empty() || value.chars().count() > Self::MAX_CHARS {
            return Err(DomainError::validation(format!(
                "invoice_number_pattern must have 1 to {} characters",
                Self::MAX_CHARS
            )));
        }
        let parts = Self::parts(value)?;
        let seqs = parts
            .iter()
            .filter(|p| matches!(p, PatternPart::Seq(_)))
            .count();
        if seqs != 1 {
            return Err(DomainError::validation(
                "invoice_number_pattern must hold {SEQ:n} exactly once",
            ));
        }
        Ok(Self(value.to_owned()))
    }

    fn parts(value: &str) -> DomainResult<Vec<PatternPart>> {
        let invalid = |what: &str| {
            DomainError::validation(format!(
                "invoice_number_pattern: {what} (tokens: {{YYYY}}, {{YY}}, {{MM}}, {{SEQ:n}} with n from 1 to 12)"
            ))
        };
        let mut parts = Vec::new();
        let mut rest = value;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('{') {
                let end = after
                    .find('}')
                    .ok_or_else(|| invalid("a { is not closed"))?;
                let token = &after[..end];
                parts.push(match token {
                    "YYYY" => PatternPart::Year4,
                    "YY" => PatternPart::Year2,
                    "MM" => PatternPart::Month,
                    _ => match token.strip_prefix("SEQ:").map(str::parse::<usize>) {
                        Some(Ok(n)) if (1..=12).contains(&n) => PatternPart::Seq(n),
                        _ => return Err(invalid(&format!("unknown token {{{token}}}"))),
                    },
                });
                rest = &after[end + 1..];
            } else {
                let end = rest.find(['{', '}']).unwrap_or(rest.len());
                if end == 0 {
                    return Err(invalid("a } without its {"));
                }
                let text = &rest[..end];
                if text.chars().any(char::is_control) {
                    return Err(invalid("control characters are not allowed"));
                }
                parts.push(PatternPart::Text(text.to_owned()));
                rest = &rest[end..];
            }
        }
        Ok(parts)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number of the `seq`-th invoice issued on a date of `year` and `month`.
    pub fn render(&self, year: i32, month: u8, seq: u64) -> String {
        let parts = Self::parts(&self.0).unwrap_or_default();
        let mut out = String::new();
        for part in parts {
            match part {
                PatternPart::Text(text) => out.push_str(&text),
                PatternPart::Year4 => out.push_str(&format!("{year:04}")),
                PatternPart::Year2 => out.push_str(&format!("{:02}", year.rem_euclid(100))),
                PatternPart::Month => out.push_str(&format!("{month:02}")),
                PatternPart::Seq(width) => out.push_str(&format!("{seq:0width$}")),
            }
        }
        out
    }
}

impl InvoiceNumberPattern {
    /// The sequence the `render`ed numbers of a `year` and `month` count in: the pattern
    /// rendered without its sequence, so that `{YYYY}-{SEQ:4}` counts from 1 each year and a
    /// pattern without a date counts on forever.
    pub fn sequence_key(&self, year: i32, month: u8) -> String {
        let parts = Self::parts(&self.0).unwrap_or_default();
        let mut out = String::new();
        for part in parts {
            match part {
                PatternPart::Text(text) => out.push_str(&text),
                PatternPart::Year4 => out.push_str(&format!("{year:04}")),
                PatternPart::Year2 => out.push_str(&format!("{:02}", year.rem_euclid(100))),
                PatternPart::Month => out.push_str(&format!("{month:02}")),
                PatternPart::Seq(_) => out.push_str("{SEQ}"),
            }
        }
        out
    }
}

impl Default for InvoiceNumberPattern {
    fn default() -> Self {
        Self(Self::DEFAULT.to_owned())
    }
}

impl InvoiceNumberPattern {
    /// The pattern of a new workspace.
    pub const DEFAULT: &'static str = "{YYYY}-{SEQ:4}";
}

/// A workspace's billing settings (`docs/billing.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceSettings {
    /// Whether members may create, change and delete clients, projects, tasks and tags.
    pub members_manage_catalog: bool,
    /// Whether members see billable rates and amounts (never cost).
    pub members_see_rates: bool,
    /// How durations are rounded when read.
    pub rounding: Rounding,
    /// How issued invoices are numbered.
    pub invoice_number_pattern: InvoiceNumberPattern,
    /// Days from an invoice's issue date to its due date, 0 to 365.
    pub payment_terms_days: u16,
    /// Entries that start before this date (in the workspace's time zone) are locked.
    pub lock_before: Option<Date>,
}

impl WorkspaceSettings {
    /// The longest payment terms, in days.
    pub const MAX_PAYMENT_TERMS_DAYS: u16 = 365;
}

impl Default for WorkspaceSettings {
    fn default() -> Self {
        Self {
            members_manage_catalog: true,
            members_see_rates: false,
            rounding: Rounding::NONE,
            invoice_number_pattern: InvoiceNumberPattern::default(),
            payment_terms_days: 30,
            lock_before: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_goes_to_the_step_its_mode_says() {
        let up = Rounding::new(15, RoundingMode::Up).unwrap();
        let down = Rounding::new(15, RoundingMode::Down).unwrap();
        let nearest = Rounding::new(15, RoundingMode::Nearest).unwrap();
        assert_eq!(up.apply(1), 900);
        assert_eq!(up.apply(900), 900);
        assert_eq!(up.apply(901), 1800);
        assert_eq!(down.apply(1799), 900);
        assert_eq!(down.apply(899), 0);
        assert_eq!(nearest.apply(449), 0);
        assert_eq!(nearest.apply(450), 900);
        assert_eq!(nearest.apply(1349), 900);
        assert_eq!(Rounding::NONE.apply(1234), 1234);
        assert_eq!(up.apply(0), 0);
        assert!(Rounding::new(61, RoundingMode::Up).is_err());
    }

    #[test]
    fn invoice_number_patterns_hold_one_sequence_and_render_it() {
        let default = InvoiceNumberPattern::default();
        assert_eq!(default.render(2026, 3, 7), "2026-0007");
        let custom = InvoiceNumberPattern::parse("INV/{YY}{MM}/{SEQ:3}").unwrap();
        assert_eq!(custom.render(2026, 11, 12), "INV/2611/012");
        assert_eq!(custom.render(2026, 11, 12345), "INV/2611/12345");
        for bad in [
            "",
            "{YYYY}",
            "{SEQ:2}-{SEQ:3}",
            "{SEQ:0}",
            "{SEQ:13}",
            "{DD}-{SEQ:2}",
            "A{SEQ:2",
            "A}{SEQ:2}",
            "A\n{SEQ:2}",
        ] {
            assert!(InvoiceNumberPattern::parse(bad).is_err(), "{bad:?}");
        }
        assert!(InvoiceNumberPattern::parse(&format!("{}{{SEQ:1}}", "x".repeat(60))).is_err());
    }
}
