//! Reports over tracked time (`docs/billing.md`): what a report asks for, and the figures it
//! answers with. Every figure is a sum of entries' own figures, per currency, so a report adds up
//! to the second and to the minor unit whatever it is grouped by.

use time::{Date, OffsetDateTime};

use crate::accounts::model::Rounding;
use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, ProjectId, TagId, TaskId, TimeEntryId, UserId};

/// The longest range of a report, in days (`to - from`).
pub const MAX_REPORT_DAYS: i64 = 366;
/// The most rows of a detailed page.
pub const MAX_DETAILED_PAGE: u32 = 1000;
/// The rows of a detailed page when none is asked.
pub const DEFAULT_DETAILED_PAGE: u32 = 50;
/// The published message of a report's invalid range or parameter (with a `detail`).
pub use crate::error::INVALID_PARAMETERS;

/// What a report covers: entries that started in `[from, to]` (days in `timezone`), stopped,
/// matching every filter given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFilter {
    /// The first day.
    pub from: Date,
    /// The last day (inclusive).
    pub to: Date,
    /// The IANA zone the days are in.
    pub timezone: String,
    /// Only these clients' entries (through their projects).
    pub client_ids: Vec<ClientId>,
    /// Only these projects' entries.
    pub project_ids: Vec<ProjectId>,
    /// Only these tasks' entries.
    pub task_ids: Vec<TaskId>,
    /// Only entries with one of these tags.
    pub tag_ids: Vec<TagId>,
    /// Only these members' entries.
    pub user_ids: Vec<UserId>,
    /// Only billable (true) or non-billable (false) entries.
    pub billable: Option<bool>,
    /// Only entries on an invoice (true) or on none (false).
    pub invoiced: Option<bool>,
    /// How durations are rounded, per entry.
    pub rounding: Rounding,
}

impl ReportFilter {
    /// Checks the range: `to` not before `from`, at most [`MAX_REPORT_DAYS`] apart.
    pub fn check_range(from: Date, to: Date) -> DomainResult<()> {
        if to < from {
            return Err(DomainError::invalid(
                INVALID_PARAMETERS,
                "to must not be before from",
            ));
        }
        if (to - from).whole_days() > MAX_REPORT_DAYS {
            return Err(DomainError::invalid(
                INVALID_PARAMETERS,
                format!("from and to must be at most {MAX_REPORT_DAYS} days apart"),
            ));
        }
        Ok(())
    }
}

/// What a summary groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupKey {
    /// The project's client.
    Client,
    /// The project.
    Project,
    /// The task.
    Task,
    /// The member.
    User,
    /// Each tag (an entry with several counts under each).
    Tag,
    /// The local day.
    Day,
    /// The ISO week of the local day (`2026-W14`).
    Week,
    /// The month of the local day (`2026-04`).
    Month,
}

impl GroupKey {
    /// Every key, as the API spells them.
    pub const ALL: [(&'static str, GroupKey); 8] = [
        ("client", GroupKey::Client),
        ("project", GroupKey::Project),
        ("task", GroupKey::Task),
        ("user", GroupKey::User),
        ("tag", GroupKey::Tag),
        ("day", GroupKey::Day),
        ("week", GroupKey::Week),
        ("month", GroupKey::Month),
    ];

    /// The key as the API spells it.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, key)| *key == self)
            .map_or("", |(name, _)| name)
    }

    /// `group_by`: one to three distinct keys, comma-separated.
    pub fn parse_list(value: &str) -> DomainResult<Vec<GroupKey>> {
        let mut keys = Vec::new();
        for part in value.split(',').map(str::trim) {
            let key = Self::ALL
                .iter()
                .find(|(name, _)| *name == part)
                .map(|(_, key)| *key)
                .ok_or_else(|| {
                    DomainError::invalid(
                        INVALID_PARAMETERS,
                        format!(
                            "group_by: {part:?} is not one of client, project, task, user, tag, \
                             day, week, month"
                        ),
                    )
                })?;
            if keys.contains(&key) {
                return Err(DomainError::invalid(
                    INVALID_PARAMETERS,
                    format!("group_by: {part} appears twice"),
                ));
            }
            keys.push(key);
        }
        if keys.is_empty() || keys.len() > 3 {
            return Err(DomainError::invalid(
                INVALID_PARAMETERS,
                "group_by takes one to three keys",
            ));
        }
        Ok(keys)
    }

    /// Whether the key names a thing with an id (rather than a period).
    pub fn has_id(self) -> bool {
        !matches!(self, GroupKey::Day | GroupKey::Week | GroupKey::Month)
    }
}

/// Money of one currency in a set of figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Amounts {
    /// ISO 4217.
    pub currency: String,
    /// The sum of the entries' billable amounts, in minor units.
    pub billable_minor: i64,
    /// The sum of the entries' cost amounts, in minor units.
    pub cost_minor: i64,
}

/// The figures of a set of entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// Their durations in sum.
    pub seconds: i64,
    /// The durations of the billable ones.
    pub billable_seconds: i64,
    /// Their durations after rounding, each rounded first.
    pub rounded_seconds: i64,
    /// How many.
    pub entries: i64,
    /// Per currency, sorted by currency.
    pub amounts: Vec<Amounts>,
}

impl Figures {
    /// Adds `other` into these figures (amounts merged per currency); a sum past what a figure
    /// holds is refused (`Validation`), never wrapped.
    pub fn add(&mut self, other: &Figures) -> DomainResult<()> {
        fn sum(a: &mut i64, b: i64) -> DomainResult<()> {
            *a = a.checked_add(b).ok_or_else(|| {
                DomainError::Validation(
                    "The report's figures are too large to sum; narrow the period or the filter"
                        .to_owned(),
                )
            })?;
            Ok(())
        }
        sum(&mut self.seconds, other.seconds)?;
        sum(&mut self.billable_seconds, other.billable_seconds)?;
        sum(&mut self.rounded_seconds, other.rounded_seconds)?;
        sum(&mut self.entries, other.entries)?;
        for amount in &other.amounts {
            match self
                .amounts
                .iter_mut()
                .find(|a| a.currency == amount.currency)
            {
                Some(mine) => {
                    sum(&mut mine.billable_minor, amount.billable_minor)?;
                    sum(&mut mine.cost_minor, amount.cost_minor)?;
                }
                None => {
                    self.amounts.push(amount.clone());
                    self.amounts.sort_by(|a, b| a.currency.cmp(&b.currency));
                }
            }
        }
        Ok(())
    }
}

/// One value of a group key: its id (or period) and its label; `key` null for entries without
/// that thing (no client, project, task or tag).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupValue {
    /// The id or the period (`2026-04-02`, `2026-W14`, `2026-04`); `None` for "none".
    pub key: Option<String>,
    /// The thing's name or the period.
    pub label: String,
}

/// A group of a summary, with its subgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryGroup {
    /// Which value of its level's key.
    pub value: GroupValue,
    /// Its figures.
    pub figures: Figures,
    /// Its subgroups by the next key (empty at the last level).
    pub groups: Vec<SummaryGroup>,
}

/// A summary: the totals of the whole filter, and the groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Every entry of the filter, each once.
    pub totals: Figures,
    /// The groups of the first key.
    pub groups: Vec<SummaryGroup>,
    /// Whether an entry may count under several tags (group_by has `tag`).
    pub tag_overlap: bool,
}

/// The figures of one group of a summary as storage reads them: the values of the first `depth`
/// keys, and the figures of that group in one currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    /// The values of the keys of the group's level and those above it.
    pub values: Vec<GroupValue>,
    /// The group's figures (one currency's amounts).
    pub figures: Figures,
}

/// Something an entry refers to: `{id, name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
}

/// A row of the detailed report: one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetailedRow {
    /// The entry.
    pub id: TimeEntryId,
    /// Its start's day in the report's time zone.
    pub date: Date,
    /// Its start.
    pub start: OffsetDateTime,
    /// Its end.
    pub end: OffsetDateTime,
    /// Its duration.
    pub seconds: i64,
    /// Its duration after rounding.
    pub rounded_seconds: i64,
    /// What was done.
    pub description: String,
    /// Whether billable.
    pub billable: bool,
    /// Its member.
    pub user: Named,
    /// Its project's client.
    pub client: Option<Named>,
    /// Its project.
    pub project: Option<Named>,
    /// Its task.
    pub task: Option<Named>,
    /// Its tags.
    pub tags: Vec<Named>,
    /// Its currency.
    pub currency: String,
    /// Its billable rate (minor units an hour), if one applies.
    pub billable_rate_minor: Option<i64>,
    /// Its billable amount.
    pub billable_amount_minor: i64,
    /// Its cost rate, if one applies.
    pub cost_rate_minor: Option<i64>,
    /// Its cost amount.
    pub cost_amount_minor: i64,
}

/// A line of the uninvoiced report: a client and project's billable time on no invoice, in one
/// currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UninvoicedRow {
    /// The client (none for projects without one).
    pub client: Option<Named>,
    /// The project (none for entries without one).
    pub project: Option<Named>,
    /// The figures (billable entries only).
    pub figures: Figures,
}

/// Builds the summary from its rows: the totals (the rows without values, one per currency) and
/// every level's groups (each level computed by itself, so an entry with several tags never counts
/// twice above the tag level). Each row is looked at once per level above it, whatever the
/// number of groups: a year by project and day is tens of thousands of rows.
pub fn summary_tree(depth: usize, rows: &[SummaryRow], tag_overlap: bool) -> DomainResult<Summary> {
    /// The groups at `at` of `rows` (all sharing the values above `at`, all at least that deep).
    fn level(rows: Vec<&SummaryRow>, at: usize, depth: usize) -> DomainResult<Vec<SummaryGroup>> {
        if at == depth {
            return Ok(Vec::new());
        }
        let mut index: std::collections::HashMap<&GroupValue, usize> =
            std::collections::HashMap::new();
        let mut groups: Vec<(SummaryGroup, Vec<&SummaryRow>)> = Vec::new();
        for row in rows {
            let value = &row.values[at];
            let i = *index.entry(value).or_insert_with(|| {
                groups.push((
                    SummaryGroup {
                        value: value.clone(),
                        figures: Figures::default(),
                        groups: Vec::new(),
                    },
                    Vec::new(),
                ));
                groups.len() - 1
            });
            if row.values.len() == at + 1 {
                groups[i].0.figures.add(&row.figures)?;
            } else {
                groups[i].1.push(row);
            }
        }
        // Named groups by label, the "none" group last; periods in order.
        groups.sort_by(|(a, _), (b, _)| {
            (a.value.key.is_none(), &a.value.label, &a.value.key).cmp(&(
                b.value.key.is_none(),
                &b.value.label,
                &b.value.key,
            ))
        });
        groups
            .into_iter()
            .map(|(mut group, below)| {
                group.groups = level(below, at + 1, depth)?;
                Ok(group)
            })
            .collect()
    }
    let mut totals = Figures::default();
    for row in rows.iter().filter(|r| r.values.is_empty()) {
        totals.add(&row.figures)?;
    }
    let grouped = rows.iter().filter(|r| !r.values.is_empty()).collect();
    Ok(Summary {
        groups: level(grouped, 0, depth)?,
        totals,
        tag_overlap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    #[test]
    fn ranges_and_group_keys_are_checked() {
        assert!(ReportFilter::check_range(date!(2026 - 01 - 01), date!(2027 - 01 - 02)).is_ok());
        assert!(ReportFilter::check_range(date!(2026 - 01 - 01), date!(2027 - 01 - 03)).is_err());
        assert!(ReportFilter::check_range(date!(2026 - 01 - 02), date!(2026 - 01 - 01)).is_err());
        assert_eq!(
            GroupKey::parse_list("project,day").unwrap(),
            [GroupKey::Project, GroupKey::Day]
        );
        for bad in [
            "",
            "project,project",
            "a,b,c,d",
            "client,user,tag,day",
            "year",
        ] {
            assert!(GroupKey::parse_list(bad).is_err(), "{bad}");
        }
    }

    fn value(key: &str) -> GroupValue {
        GroupValue {
            key: Some(key.into()),
            label: key.into(),
        }
    }

    fn figures(seconds: i64, currency: &str, minor: i64) -> Figures {
        Figures {
            seconds,
            billable_seconds: seconds,
            rounded_seconds: seconds,
            entries: 1,
            amounts: vec![Amounts {
                currency: currency.into(),
                billable_minor: minor,
                cost_minor: 0,
            }],
        }
    }

    #[test]
    fn the_tree_merges_currencies_per_group_and_nests_levels() {
        let rows = vec![
            SummaryRow {
                values: vec![value("p1")],
                figures: figures(60, "EUR", 100),
            },
            SummaryRow {
                values: vec![value("p1")],
                figures: figures(30, "USD", 7),
            },
            SummaryRow {
                values: vec![value("p1"), value("2026-01-01")],
                figures: figures(90, "EUR", 100),
            },
        ];
        let tree = summary_tree(2, &rows, false).unwrap();
        assert_eq!(tree.groups.len(), 1);
        let p1 = &tree.groups[0];
        assert_eq!(p1.figures.seconds, 90);
        assert_eq!(p1.figures.entries, 2);
        assert_eq!(
            p1.figures
                .amounts
                .iter()
                .map(|a| (a.currency.as_str(), a.billable_minor))
                .collect::<Vec<_>>(),
            [("EUR", 100), ("USD", 7)]
        );
        assert_eq!(p1.groups.len(), 1);
        assert!(p1.groups[0].groups.is_empty());
    }
}
