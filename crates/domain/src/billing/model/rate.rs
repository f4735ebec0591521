//! Hourly rates and the price an entry gets from them (`docs/billing.md`).
//!
//! Money is an integer of the currency's minor units (ISO 4217 exponent: USD 2, JPY 0, BHD 3),
//! never a float. A rate is in force from its `effective_from` date (in the workspace's time zone)
//! until a later row of the same kind, scope, target and currency; the price of an entry is the
//! rate of the most specific level with a row in force on the entry's date, in the entry's
//! currency ([`choose_rate`]).

use time::{Date, OffsetDateTime};

use crate::error::{DomainError, DomainResult};
pub use crate::ids::RateId;
use crate::ids::{ClientId, ProjectId, TaskId, UserId, WorkspaceId};

/// The highest hourly rate, in minor units: ten years of seconds times it stays far inside 64
/// bits, and an entry's amount stays an exact JSON number (below 2^53).
pub const MAX_HOURLY_MINOR: i64 = 1_000_000_000;

/// What a rate prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateKind {
    /// What the client is charged (billable entries only).
    Billable,
    /// What the time costs the workspace (every entry).
    Cost,
}

impl RateKind {
    /// The kind as the API and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            RateKind::Billable => "billable",
            RateKind::Cost => "cost",
        }
    }

    /// The kind spelled `value`; a 400 naming the choices otherwise.
    pub fn parse(value: &str) -> DomainResult<Self> {
        match value {
            "billable" => Ok(RateKind::Billable),
            "cost" => Ok(RateKind::Cost),
            other => Err(DomainError::validation(format!(
                "kind must be billable or cost, got: {other}"
            ))),
        }
    }
}

/// What a rate applies to, with the ids that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateTarget {
    /// Every entry of the workspace.
    Workspace,
    /// A member's entries.
    Member(UserId),
    /// The entries of a client's projects.
    Client(ClientId),
    /// A project's entries.
    Project(ProjectId),
    /// A task's entries.
    Task(TaskId),
    /// A member's entries on a project.
    ProjectMember(ProjectId, UserId),
}

impl RateTarget {
    /// Every scope, most specific first: the precedence of [`choose_rate`].
    pub const LEVELS: [&'static str; 6] = [
        "project_member",
        "task",
        "project",
        "client",
        "member",
        "workspace",
    ];

    /// The scope's name.
    pub fn scope(self) -> &'static str {
        match self {
            RateTarget::Workspace => "workspace",
            RateTarget::Member(_) => "member",
            RateTarget::Client(_) => "client",
            RateTarget::Project(_) => "project",
            RateTarget::Task(_) => "task",
            RateTarget::ProjectMember(..) => "project_member",
        }
    }

    /// The precedence of the scope: 1 is the most specific.
    pub fn level(self) -> usize {
        Self::LEVELS
            .iter()
            .position(|s| *s == self.scope())
            .map_or(Self::LEVELS.len(), |i| i + 1)
    }

    /// The target of `scope` with the ids given: exactly those the scope uses, or a 400 naming
    /// the one missing or extra.
    pub fn parse(
        scope: &str,
        user: Option<UserId>,
        client: Option<ClientId>,
        project: Option<ProjectId>,
        task: Option<TaskId>,
    ) -> DomainResult<Self> {
        let target = match scope {
            "workspace" => RateTarget::Workspace,
            "member" => RateTarget::Member(required("user_id", scope, user)?),
            "client" => RateTarget::Client(required("client_id", scope, client)?),
            "project" => RateTarget::Project(required("project_id", scope, project)?),
            "task" => RateTarget::Task(required("task_id", scope, task)?),
            "project_member" => RateTarget::ProjectMember(
                required("project_id", scope, project)?,
                required("user_id", scope, user)?,
            ),
            other => {
                return Err(DomainError::validation(format!(
                    "scope must be one of workspace, member, client, project, task, \
                     project_member, got: {other}"
                )));
            }
        };
        let (uses_user, uses_client, uses_project, uses_task) = target.uses();
        for (field, given, used) in [
            ("user_id", user.is_some(), uses_user),
            ("client_id", client.is_some(), uses_client),
            ("project_id", project.is_some(), uses_project),
            ("task_id", task.is_some(), uses_task),
        ] {
            if given && !used {
                return Err(DomainError::validation(format!(
                    "{field} must be null for scope {scope}"
                )));
            }
        }
        Ok(target)
    }

    /// Which ids the target uses: user, client, project, task.
    fn uses(self) -> (bool, bool, bool, bool) {
        match self {
            RateTarget::Workspace => (false, false, false, false),
            RateTarget::Member(_) => (true, false, false, false),
            RateTarget::Client(_) => (false, true, false, false),
            RateTarget::Project(_) => (false, false, true, false),
            RateTarget::Task(_) => (false, false, false, true),
            RateTarget::ProjectMember(..) => (true, false, true, false),
        }
    }

    /// The user id the target names, if any.
    pub fn user_id(self) -> Option<UserId> {
        match self {
            RateTarget::Member(user) | RateTarget::ProjectMember(_, user) => Some(user),
            _ => None,
        }
    }

    /// The client id the target names, if any.
    pub fn client_id(self) -> Option<ClientId> {
        match self {
            RateTarget::Client(client) => Some(client),
            _ => None,
        }
    }

    /// The project id the target names, if any.
    pub fn project_id(self) -> Option<ProjectId> {
        match self {
            RateTarget::Project(project) | RateTarget::ProjectMember(project, _) => Some(project),
            _ => None,
        }
    }

    /// The task id the target names, if any.
    pub fn task_id(self) -> Option<TaskId> {
        match self {
            RateTarget::Task(task) => Some(task),
            _ => None,
        }
    }

    /// Whether the target reaches an entry with these references.
    pub fn reaches(self, entry: &PricedEntry) -> bool {
        match self {
            RateTarget::Workspace => true,
            RateTarget::Member(user) => entry.user_id == user,
            RateTarget::Client(client) => entry.client_id == Some(client),
            RateTarget::Project(project) => entry.project_id == Some(project),
            RateTarget::Task(task) => entry.task_id == Some(task),
            RateTarget::ProjectMember(project, user) => {
                entry.project_id == Some(project) && entry.user_id == user
            }
        }
    }
}

fn required<T>(field: &str, scope: &str, value: Option<T>) -> DomainResult<T> {
    value.ok_or_else(|| DomainError::validation(format!("{field} is required for scope {scope}")))
}

/// An hourly rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rate {
    /// Identifier.
    pub id: RateId,
    /// The workspace it belongs to.
    pub workspace_id: WorkspaceId,
    /// Billable or cost.
    pub kind: RateKind,
    /// What it applies to.
    pub target: RateTarget,
    /// ISO 4217 code: only entries in this currency get it.
    pub currency: String,
    /// The amount of an hour, in the currency's minor units, 0 to [`MAX_HOURLY_MINOR`].
    pub hourly_minor: i64,
    /// The first day it is in force, in the workspace's time zone.
    pub effective_from: Date,
    /// When it was added.
    pub created_at: OffsetDateTime,
}

/// What decides an entry's price: its references, its date and its currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricedEntry {
    /// Its member.
    pub user_id: UserId,
    /// Its project, if any.
    pub project_id: Option<ProjectId>,
    /// Its task, if any.
    pub task_id: Option<TaskId>,
    /// Its project's client, if any.
    pub client_id: Option<ClientId>,
    /// Its project's client's currency, or else the workspace's.
    pub currency: String,
    /// Its start's date in the workspace's time zone.
    pub day: Date,
    /// Whether it is billable (a non-billable entry gets no billable rate).
    pub billable: bool,
}

/// The rate of `kind` that prices `entry`: among `rates` in the entry's currency and in force on
/// its day (the latest `effective_from` not after it, per scope and target), the one of the most
/// specific level: project_member, task, project, client, member, workspace. None for a
/// billable rate of a non-billable entry. (The PostgreSQL adapter states the same rule in
/// `repricing.sql`; the contract tests hold both to it.)
pub fn choose_rate<'a>(rates: &'a [Rate], entry: &PricedEntry, kind: RateKind) -> Option<&'a Rate> {
    if kind == RateKind::Billable && !entry.billable {
        return None;
    }
    rates
        .iter()
        .filter(|r| {
            r.kind == kind
                && r.currency == entry.currency
                && r.effective_from <= entry.day
                && r.target.reaches(entry)
        })
        .min_by_key(|r| (r.target.level(), std::cmp::Reverse(r.effective_from)))
}

/// The rates an entry got, as stored with it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredPrice {
    /// The entry's currency when it was priced (none before any pricing).
    pub currency: Option<String>,
    /// The billable rate and where it came from, if one applied.
    pub billable: Option<AppliedRate>,
    /// The cost rate and where it came from, if one applied.
    pub cost: Option<AppliedRate>,
    /// The invoice (draft or issued) the entry is on, which locks it.
    pub invoice_id: Option<crate::ids::InvoiceId>,
}

/// A rate as an entry got it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedRate {
    /// The rate row.
    pub id: RateId,
    /// Its scope.
    pub scope: String,
    /// Its hourly amount in minor units.
    pub hourly_minor: i64,
}

impl AppliedRate {
    /// The applied form of `rate`.
    pub fn of(rate: &Rate) -> Self {
        Self {
            id: rate.id,
            scope: rate.target.scope().to_owned(),
            hourly_minor: rate.hourly_minor,
        }
    }
}

/// `round_half_up(hourly_minor × seconds / 3600)`, in integers: the amount of `seconds` at an
/// hourly rate. Exact for every input (the product is taken in 128 bits).
pub fn amount_minor(hourly_minor: i64, seconds: i64) -> i64 {
    let product = i128::from(hourly_minor) * i128::from(seconds.max(0));
    let amount = (product + 1800) / 3600;
    i64::try_from(amount).unwrap_or(i64::MAX)
}

/// The number of decimals of `currency`'s minor unit (ISO 4217), 2 when it has none defined.
pub fn minor_digits(currency: &str) -> u32 {
    iso_currency::Currency::from_code(currency)
        .and_then(|c| c.exponent())
        .map_or(2, u32::from)
}

/// `minor` units of `currency` as a decimal string in major units: `16100` USD is `"161.00"`,
/// `500` JPY `"500"`, `1234` BHD `"1.234"`.
pub fn major_units(minor: i64, currency: &str) -> String {
    let digits = minor_digits(currency);
    if digits == 0 {
        return minor.to_string();
    }
    let scale = 10_i128.pow(digits);
    let value = i128::from(minor);
    let sign = if value < 0 { "-" } else { "" };
    let abs = value.abs();
    format!(
        "{sign}{}.{:0width$}",
        abs / scale,
        abs % scale,
        width = digits as usize
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::{date, datetime};
    use uuid::Uuid;

    fn uid(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn rate(n: u128, kind: RateKind, target: RateTarget, from: Date, minor: i64) -> Rate {
        Rate {
            id: RateId(uid(n)),
            workspace_id: WorkspaceId(uid(1)),
            kind,
            target,
            currency: "EUR".into(),
            hourly_minor: minor,
            effective_from: from,
            created_at: datetime!(2026-01-01 00:00 UTC),
        }
    }

    fn entry(day: Date) -> PricedEntry {
        PricedEntry {
            user_id: UserId(uid(10)),
            project_id: Some(ProjectId(uid(20))),
            task_id: Some(TaskId(uid(30))),
            client_id: Some(ClientId(uid(40))),
            currency: "EUR".into(),
            day,
            billable: true,
        }
    }

    #[test]
    fn the_most_specific_level_in_force_wins_and_dates_choose_within_a_level() {
        let user = UserId(uid(10));
        let project = ProjectId(uid(20));
        let rates = vec![
            rate(
                1,
                RateKind::Billable,
                RateTarget::Workspace,
                date!(2026 - 01 - 01),
                5000,
            ),
            rate(
                2,
                RateKind::Billable,
                RateTarget::Member(user),
                date!(2026 - 03 - 01),
                7000,
            ),
            rate(
                3,
                RateKind::Billable,
                RateTarget::Project(project),
                date!(2026 - 02 - 01),
                9000,
            ),
            rate(
                4,
                RateKind::Billable,
                RateTarget::Project(project),
                date!(2026 - 04 - 01),
                9500,
            ),
            rate(
                5,
                RateKind::Cost,
                RateTarget::Member(user),
                date!(2026 - 01 - 01),
                3000,
            ),
        ];
        let pick = |day: Date, kind| choose_rate(&rates, &entry(day), kind).map(|r| r.id.0);
        assert_eq!(pick(date!(2025 - 12 - 31), RateKind::Billable), None);
        assert_eq!(
            pick(date!(2026 - 01 - 31), RateKind::Billable),
            Some(uid(1))
        );
        assert_eq!(
            pick(date!(2026 - 02 - 01), RateKind::Billable),
            Some(uid(3))
        );
        assert_eq!(
            pick(date!(2026 - 03 - 31), RateKind::Billable),
            Some(uid(3)),
            "project beats member"
        );
        assert_eq!(
            pick(date!(2026 - 04 - 01), RateKind::Billable),
            Some(uid(4))
        );
        assert_eq!(pick(date!(2026 - 04 - 01), RateKind::Cost), Some(uid(5)));
        let mut off = entry(date!(2026 - 04 - 01));
        off.billable = false;
        assert_eq!(choose_rate(&rates, &off, RateKind::Billable), None);
        assert!(choose_rate(&rates, &off, RateKind::Cost).is_some());
        off.currency = "USD".into();
        assert_eq!(
            choose_rate(&rates, &off, RateKind::Cost),
            None,
            "another currency"
        );
    }

    #[test]
    fn a_scope_takes_exactly_its_ids() {
        let u = Some(UserId(uid(1)));
        let p = Some(ProjectId(uid(2)));
        assert_eq!(
            RateTarget::parse("project_member", u, None, p, None).unwrap(),
            RateTarget::ProjectMember(ProjectId(uid(2)), UserId(uid(1)))
        );
        let err = |r: DomainResult<RateTarget>| r.unwrap_err().to_string();
        assert_eq!(
            err(RateTarget::parse("project_member", None, None, p, None)),
            "user_id is required for scope project_member"
        );
        assert_eq!(
            err(RateTarget::parse("workspace", u, None, None, None)),
            "user_id must be null for scope workspace"
        );
        assert_eq!(
            err(RateTarget::parse("team", None, None, None, None)),
            "scope must be one of workspace, member, client, project, task, project_member, got: team"
        );
        assert_eq!(RateTarget::Workspace.level(), 6);
        assert_eq!(
            RateTarget::ProjectMember(ProjectId(uid(2)), UserId(uid(1))).level(),
            1
        );
    }

    #[test]
    fn amounts_round_half_up_in_integers_and_print_in_major_units() {
        assert_eq!(amount_minor(10_000, 3600), 10_000);
        assert_eq!(amount_minor(10_000, 1), 3, "2.77… rounds to 3");
        assert_eq!(amount_minor(1, 1800), 1, "0.5 rounds up");
        assert_eq!(amount_minor(1, 1799), 0);
        assert_eq!(
            amount_minor(MAX_HOURLY_MINOR, 10 * 366 * 86_400),
            87_840_000_000_000
        );
        assert_eq!(major_units(16_100, "USD"), "161.00");
        assert_eq!(major_units(500, "JPY"), "500");
        assert_eq!(major_units(1_234, "BHD"), "1.234");
        assert_eq!(major_units(5, "EUR"), "0.05");
        assert_eq!(major_units(-5, "EUR"), "-0.05");
    }
}
