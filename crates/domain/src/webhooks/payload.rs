//! The JSON payloads of the four events, shared by live deliveries and the fallback endpoints so
//! that the two can never differ in shape.
//!
//! Field names and presence follow the published interface exactly: camelCase; `endTime` and
//! `duration` absent (not null) in the timer-started shape; `project` and `task` null when unset;
//! `tags` an empty array when there are none; the client payload has no `note` or `currency`.

use serde::Serialize;
use uuid::Uuid;

use crate::accounts::model::{User, Workspace};
use crate::error::{DomainError, DomainResult};
use crate::timefmt::rfc3339;
use crate::tracking::model::{Client, Project, Tag, Task, TimeEntry};
use crate::webhooks::model::EventType;

/// `{id, name}`: how payloads refer to a workspace, member, project, task or tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Ref {
    /// Identifier.
    pub id: String,
    /// Display name.
    pub name: String,
}

impl Ref {
    fn new(id: impl std::fmt::Display, name: &str) -> Self {
        Self {
            id: id.to_string(),
            name: name.to_owned(),
        }
    }
}

/// The `CLIENT_CREATED` payload (and the client fallback's element).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientPayload {
    /// Client id.
    pub id: String,
    /// Name.
    pub name: String,
    /// E-mail, null when unset.
    pub email: Option<String>,
    /// Phone, null when unset.
    pub phone: Option<String>,
    /// Address, null when unset.
    pub address: Option<String>,
    /// `active` or `inactive`.
    pub status: &'static str,
    /// `company` or `individual`.
    #[serde(rename = "type")]
    pub client_type: &'static str,
    /// The client's workspace.
    pub workspace: Ref,
    /// Creation time.
    pub created_at: String,
    /// Last modification time.
    pub updated_at: String,
    /// `CLIENT_UPDATED` only: the fields whose value changed, sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_fields: Option<Vec<String>>,
}

/// The payload of `client` of `workspace` (`CLIENT_CREATED`, `CLIENT_DELETED`, and
/// `CLIENT_UPDATED` before its `changedFields` are set).
pub fn client_created(client: &Client, workspace: &Workspace) -> ClientPayload {
    ClientPayload {
        id: client.id.to_string(),
        name: client.name.clone(),
        email: client.email.clone(),
        phone: client.phone.clone(),
        address: client.address.clone(),
        status: client.status.as_str(),
        client_type: client.client_type.as_str(),
        workspace: Ref::new(workspace.id, &workspace.name),
        created_at: rfc3339(client.created_at),
        updated_at: rfc3339(client.updated_at),
        changed_fields: None,
    }
}

/// The `PROJECT_CREATED`, `PROJECT_UPDATED` and `PROJECT_DELETED` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProjectPayload {
    /// Project id.
    pub id: String,
    /// Name.
    pub name: String,
    /// The client the project is for, null when none.
    pub client: Option<Ref>,
    /// The project's workspace.
    pub workspace: Ref,
    /// Creation time.
    pub created_at: String,
    /// Last modification time.
    pub updated_at: String,
    /// `PROJECT_UPDATED` only: the fields whose value changed, sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_fields: Option<Vec<String>>,
}

/// The `INVOICE_*` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct InvoicePayload {
    /// Invoice id.
    pub id: String,
    /// Its number; null while a draft.
    pub number: Option<String>,
    /// `draft`, `issued` or `void`.
    pub status: &'static str,
    /// `unpaid`, `partially_paid`, `paid` or `overdue`.
    pub payment_status: &'static str,
    /// The client billed.
    pub client: Ref,
    /// ISO 4217.
    pub currency: String,
    /// The total, in minor units of the currency.
    pub total_minor: i64,
    /// What is paid.
    pub paid_minor: i64,
    /// What is left to pay.
    pub balance_minor: i64,
    /// The issue date (`YYYY-MM-DD`); null while a draft has none.
    pub issue_date: Option<String>,
    /// The due date; null while a draft has none.
    pub due_date: Option<String>,
    /// The invoice's workspace.
    pub workspace: Ref,
    /// Creation time.
    pub created_at: String,
    /// Last modification time.
    pub updated_at: String,
}

/// The payload of `invoice` of `workspace`, with its payment status.
pub fn invoice(
    invoice: &crate::billing::model::Invoice,
    payment_status: crate::billing::model::PaymentStatus,
    workspace: &Workspace,
) -> InvoicePayload {
    InvoicePayload {
        id: invoice.id.to_string(),
        number: invoice.number.clone(),
        status: invoice.status.as_str(),
        payment_status: payment_status.as_str(),
        client: Ref::new(invoice.client.id, &invoice.client.name),
        currency: invoice.currency.clone(),
        total_minor: invoice.totals.total_minor,
        paid_minor: invoice.paid_minor(),
        balance_minor: invoice.balance_minor(),
        issue_date: invoice.issue_date.map(crate::timefmt::iso_date),
        due_date: invoice.due_date.map(crate::timefmt::iso_date),
        workspace: Ref::new(workspace.id, &workspace.name),
        created_at: rfc3339(invoice.created_at),
        updated_at: rfc3339(invoice.updated_at),
    }
}

/// The payload of `project` (for `client`, when it has one) of `workspace`.
pub fn project(
    project: &Project,
    client: Option<&Client>,
    workspace: &Workspace,
) -> ProjectPayload {
    ProjectPayload {
        id: project.id.to_string(),
        name: project.name.clone(),
        client: client.map(|c| Ref::new(c.id, &c.name)),
        workspace: Ref::new(workspace.id, &workspace.name),
        created_at: rfc3339(project.created_at),
        updated_at: rfc3339(project.updated_at),
        changed_fields: None,
    }
}

/// The names of the top-level fields whose values differ between `before` and `after` (two
/// payloads of one thing), sorted; `updatedAt`, which every change moves, is not counted. Empty
/// when the change is invisible in the payload, which then emits no event.
pub fn changed_fields<T: Serialize>(before: &T, after: &T) -> DomainResult<Vec<String>> {
    fn fields(
        payload: &impl Serialize,
    ) -> DomainResult<serde_json::Map<String, serde_json::Value>> {
        match serde_json::to_value(payload) {
            Ok(serde_json::Value::Object(map)) => Ok(map),
            Ok(other) => Err(DomainError::Unexpected(anyhow::anyhow!(
                "a payload is an object, not {other}"
            ))),
            Err(e) => Err(DomainError::Unexpected(e.into())),
        }
    }
    let (before, after) = (fields(before)?, fields(after)?);
    let mut names: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| !matches!(k.as_str(), "updatedAt" | "changedFields"))
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Which time-entry trigger a payload is for; it decides `action` and whether the end is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryAction {
    /// `start_timer`: no `endTime`, no `duration`.
    StartTimer,
    /// `stop_timer`: the full entry.
    StopTimer,
    /// `manual_entry`: the full entry.
    ManualEntry,
    /// `update` (`TIME_ENTRY_UPDATED`): the entry after the change; the end shown when it has one.
    Update,
    /// `delete` (`TIME_ENTRY_DELETED`): the entry as it was; the end shown when it had one.
    Delete,
}

impl EntryAction {
    /// The `action` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StartTimer => "start_timer",
            Self::StopTimer => "stop_timer",
            Self::ManualEntry => "manual_entry",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }

    /// The event that carries this payload.
    pub fn event_type(self) -> EventType {
        match self {
            Self::StartTimer => EventType::TimerStarted,
            Self::StopTimer => EventType::TimerStopped,
            Self::ManualEntry => EventType::TimeEntryCreated,
            Self::Update => EventType::TimeEntryUpdated,
            Self::Delete => EventType::TimeEntryDeleted,
        }
    }
}

/// A time-entry payload (`TIMER_STARTED`, `TIMER_STOPPED`, `TIME_ENTRY_CREATED`,
/// `TIME_ENTRY_UPDATED`, `TIME_ENTRY_DELETED`, and the fallbacks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TimeEntryPayload {
    /// Entry id.
    pub id: String,
    /// Description, possibly empty.
    pub description: String,
    /// Calendar date of the start in the workspace's time zone, `YYYY-MM-DD`.
    pub date: String,
    /// Start.
    pub start_time: String,
    /// End; absent (not null) in the timer-started shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    /// Whole seconds from start to end; absent in the timer-started shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<i64>,
    /// Billable or not.
    pub billable: bool,
    /// `start_timer`, `stop_timer` or `manual_entry`.
    pub action: &'static str,
    /// The entry's workspace.
    pub workspace: Ref,
    /// The member who started, stopped or created the entry.
    pub team_member: Ref,
    /// The project, null when none.
    pub project: Option<Ref>,
    /// The task, null when none.
    pub task: Option<Ref>,
    /// The tags, `[]` when none.
    pub tags: Vec<Ref>,
    /// Creation time.
    pub created_at: String,
    /// Last update (for a stopped timer, the stop).
    pub updated_at: String,
    /// `TIME_ENTRY_UPDATED` only: the fields whose value changed, sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_fields: Option<Vec<String>>,
}

/// What a time-entry payload names besides the entry itself.
#[derive(Debug, Clone, Copy)]
pub struct EntryContext<'a> {
    /// The entry's workspace (its time zone gives `date`).
    pub workspace: &'a Workspace,
    /// The member who acted.
    pub member: &'a User,
    /// The entry's project, if any.
    pub project: Option<&'a Project>,
    /// The entry's task, if any.
    pub task: Option<&'a Task>,
    /// The entry's tags.
    pub tags: &'a [Tag],
}

/// The payload of `entry` for `action`.
///
/// MUST be given a finished entry for `StopTimer` and `ManualEntry`; a running one is a bug and
/// yields `Unexpected`.
pub fn time_entry(
    entry: &TimeEntry,
    action: EntryAction,
    ctx: &EntryContext<'_>,
) -> DomainResult<TimeEntryPayload> {
    let (end_time, duration) = match action {
        EntryAction::StartTimer => (None, None),
        EntryAction::StopTimer | EntryAction::ManualEntry => {
            let end = entry.end.ok_or_else(|| {
                DomainError::Unexpected(anyhow::anyhow!(
                    "a {} payload needs a finished entry",
                    action.as_str()
                ))
            })?;
            (Some(rfc3339(end)), entry.duration_seconds())
        }
        EntryAction::Update | EntryAction::Delete => match entry.end {
            Some(end) => (Some(rfc3339(end)), entry.duration_seconds()),
            None => (None, None),
        },
    };
    Ok(TimeEntryPayload {
        id: entry.id.to_string(),
        description: entry.description.clone(),
        date: local_date(entry.start, &ctx.workspace.timezone)?,
        start_time: rfc3339(entry.start),
        end_time,
        duration,
        billable: entry.billable,
        action: action.as_str(),
        workspace: Ref::new(ctx.workspace.id, &ctx.workspace.name),
        team_member: Ref::new(ctx.member.id, &ctx.member.name),
        project: ctx.project.map(|p| Ref::new(p.id, &p.name)),
        task: ctx.task.map(|t| Ref::new(t.id, &t.name)),
        tags: ctx.tags.iter().map(|t| Ref::new(t.id, &t.name)).collect(),
        created_at: rfc3339(entry.created_at),
        updated_at: rfc3339(entry.updated_at),
        changed_fields: None,
    })
}

/// The calendar date of `at` in the IANA zone `timezone`, as `YYYY-MM-DD`.
pub(crate) fn local_date(at: time::OffsetDateTime, timezone: &str) -> DomainResult<String> {
    crate::timefmt::local_day(at, timezone).map(crate::timefmt::iso_date)
}

/// Serializes a payload to the exact text stored in the outbox and delivered.
/// The `WEBHOOK_TEST` payload: `{event, webhook_id, workspace_id, timestamp}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookTestPayload {
    /// `WEBHOOK_TEST`.
    pub event: &'static str,
    /// The webhook tested.
    pub webhook_id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// When the test was asked for.
    pub timestamp: String,
}

/// The webhook a notice is about, as the notice shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NoticeWebhook {
    /// Its id.
    pub id: String,
    /// Its URL.
    pub url: String,
    /// Its description, null when unset.
    pub description: Option<String>,
    /// `ACTIVE`, `DISABLED`, or `DELETED` (after a `410 Gone`).
    pub status: &'static str,
}

/// The payload of `WEBHOOK_FAILING`, `WEBHOOK_DISABLED` and `WEBHOOK_RECOVERED`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookNoticePayload {
    /// The event type.
    pub event: &'static str,
    /// The webhook it is about.
    pub webhook: NoticeWebhook,
    /// `failing` or `gone` for `WEBHOOK_DISABLED`; null otherwise.
    pub reason: Option<&'static str>,
    /// The first failure of the streak (null for `gone` after a success, and for a recovery the
    /// claim did not see failing).
    pub failing_since: Option<String>,
    /// The status code of the attempt that led to the notice, if it got a response.
    pub last_status_code: Option<i32>,
    /// The error of that attempt, null after a success.
    pub last_error: Option<String>,
    /// When the notice was made.
    pub timestamp: String,
}

pub(crate) fn to_body(payload: &impl Serialize) -> DomainResult<String> {
    serde_json::to_string(payload).map_err(|e| DomainError::Unexpected(e.into()))
}

/// Fixed sample records for the fallback endpoints when a workspace has no real one yet. Each is
/// built by the same builder as the live payload, from constant data, so it has exactly the live
/// payload's keys and is byte-for-byte the same on every call.
pub mod samples {
    use time::macros::datetime;

    use super::*;
    use crate::ids::{ClientId, ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId};
    use crate::tracking::model::{ClientStatus, ClientType, EntrySource};

    fn id(n: u128) -> Uuid {
        // Version-4-shaped constants, recognisable as samples.
        Uuid::from_u128(0x00000000_0000_4000_8000_000000000000 | n)
    }

    fn workspace() -> Workspace {
        Workspace {
            id: WorkspaceId(id(1)),
            name: "Sample Workspace".into(),
            timezone: "UTC".into(),
            currency: "USD".into(),
            created_at: datetime!(2026-01-01 00:00 UTC),
        }
    }

    /// The sample `CLIENT_CREATED` payload.
    pub fn client() -> ClientPayload {
        let at = datetime!(2026-01-05 09:00 UTC);
        let client = Client {
            id: ClientId(id(2)),
            workspace_id: WorkspaceId(id(1)),
            name: "Acme Corporation".into(),
            client_type: ClientType::Company,
            status: ClientStatus::Active,
            email: Some("billing@acme.example".into()),
            phone: Some("+1 555 0100".into()),
            address: Some("1 Example Street, Springfield".into()),
            note: None,
            currency: "USD".into(),
            created_at: at,
            updated_at: at,
        };
        client_created(&client, &workspace())
    }

    /// The sample project payload.
    pub fn project() -> ProjectPayload {
        let at = datetime!(2026-01-02 00:00 UTC);
        let project = Project {
            id: ProjectId(id(4)),
            workspace_id: WorkspaceId(id(1)),
            client_id: Some(ClientId(id(2))),
            name: "Website Redesign".into(),
            created_at: at,
            updated_at: at,
        };
        let client = Client {
            id: ClientId(id(2)),
            workspace_id: WorkspaceId(id(1)),
            name: "Acme Corporation".into(),
            client_type: ClientType::Company,
            status: ClientStatus::Active,
            email: None,
            phone: None,
            address: None,
            note: None,
            currency: "USD".into(),
            created_at: at,
            updated_at: at,
        };
        super::project(&project, Some(&client), &workspace())
    }

    /// The sample body of an event of `event_type`: the fallback-style record, with
    /// `changedFields` on the change events.
    pub fn body(event_type: EventType) -> String {
        let changed = |names: &[&str]| Some(names.iter().map(|n| (*n).to_owned()).collect());
        let body = match event_type {
            EventType::TimerStarted => to_body(&time_entry(EntryAction::StartTimer)),
            EventType::TimerStopped => to_body(&time_entry(EntryAction::StopTimer)),
            EventType::TimeEntryCreated => to_body(&time_entry(EntryAction::ManualEntry)),
            EventType::TimeEntryUpdated => to_body(&TimeEntryPayload {
                changed_fields: changed(&["description"]),
                ..time_entry(EntryAction::Update)
            }),
            EventType::TimeEntryDeleted => to_body(&time_entry(EntryAction::Delete)),
            EventType::ClientCreated | EventType::ClientDeleted => to_body(&client()),
            EventType::ClientUpdated => to_body(&ClientPayload {
                changed_fields: changed(&["email", "name"]),
                ..client()
            }),
            EventType::ProjectCreated | EventType::ProjectDeleted => to_body(&project()),
            EventType::ProjectUpdated => to_body(&ProjectPayload {
                changed_fields: changed(&["name"]),
                ..project()
            }),
            EventType::WebhookFailing
            | EventType::WebhookDisabled
            | EventType::WebhookRecovered => to_body(&notice(event_type)),
            EventType::InvoiceCreated
            | EventType::InvoiceIssued
            | EventType::InvoiceVoided
            | EventType::InvoicePaid
            | EventType::InvoiceOverdue => to_body(&invoice(event_type)),
            EventType::WebhookTest => to_body(&WebhookTestPayload {
                event: EventType::WebhookTest.as_str(),
                webhook_id: "wh_SampleWebhook0000000000".into(),
                workspace_id: id(1).to_string(),
                timestamp: "2026-01-05T09:00:00Z".into(),
            }),
        };
        body.expect("a sample serializes")
    }

    /// The sample invoice payload as `event_type` carries it.
    pub fn invoice(event_type: EventType) -> InvoicePayload {
        use crate::billing::model::{PaymentStatus, invoice::InvoiceStatus};
        let issued = event_type != EventType::InvoiceCreated;
        let (status, payment) = match event_type {
            EventType::InvoiceCreated => (InvoiceStatus::Draft, PaymentStatus::Unpaid),
            EventType::InvoiceVoided => (InvoiceStatus::Void, PaymentStatus::Unpaid),
            EventType::InvoicePaid => (InvoiceStatus::Issued, PaymentStatus::Paid),
            EventType::InvoiceOverdue => (InvoiceStatus::Issued, PaymentStatus::Overdue),
            _ => (InvoiceStatus::Issued, PaymentStatus::Unpaid),
        };
        let paid = if payment == PaymentStatus::Paid {
            21420
        } else {
            0
        };
        InvoicePayload {
            id: id(8).to_string(),
            number: issued.then(|| "2026-0001".to_owned()),
            status: status.as_str(),
            payment_status: payment.as_str(),
            client: Ref::new(id(2), "Acme Corporation"),
            currency: "USD".into(),
            total_minor: 21420,
            paid_minor: paid,
            balance_minor: 21420 - paid,
            issue_date: issued.then(|| "2026-02-01".to_owned()),
            due_date: issued.then(|| "2026-03-03".to_owned()),
            workspace: Ref::new(workspace().id, &workspace().name),
            created_at: "2026-02-01T09:00:00Z".into(),
            updated_at: "2026-02-01T09:00:00Z".into(),
        }
    }

    fn notice(event_type: EventType) -> WebhookNoticePayload {
        let disabled = event_type == EventType::WebhookDisabled;
        let recovered = event_type == EventType::WebhookRecovered;
        WebhookNoticePayload {
            event: event_type.as_str(),
            webhook: NoticeWebhook {
                id: "wh_SampleWebhook0000000000".into(),
                url: "https://hooks.example.com/catch/1".into(),
                description: Some("Sample webhook".into()),
                status: if disabled { "DISABLED" } else { "ACTIVE" },
            },
            reason: disabled.then_some("failing"),
            failing_since: Some("2026-01-04T09:00:00Z".into()),
            last_status_code: if recovered { Some(200) } else { Some(503) },
            last_error: (!recovered).then(|| "HTTP 503".to_owned()),
            timestamp: "2026-01-05T09:00:00Z".into(),
        }
    }

    /// The sample time-entry payload for `action`.
    pub fn time_entry(action: EntryAction) -> TimeEntryPayload {
        let workspace = workspace();
        let member = User {
            id: UserId(id(3)),
            name: "Sample Member".into(),
            email: "member@example.com".into(),
            created_at: datetime!(2026-01-01 00:00 UTC),
        };
        let project = Project {
            id: ProjectId(id(4)),
            workspace_id: workspace.id,
            client_id: Some(ClientId(id(2))),
            name: "Website Redesign".into(),
            created_at: datetime!(2026-01-02 00:00 UTC),
            updated_at: datetime!(2026-01-02 00:00 UTC),
        };
        let task = Task {
            id: TaskId(id(5)),
            workspace_id: workspace.id,
            project_id: project.id,
            name: "Design Review".into(),
            created_at: datetime!(2026-01-02 00:00 UTC),
            updated_at: datetime!(2026-01-02 00:00 UTC),
        };
        let tags = [Tag {
            id: TagId(id(6)),
            workspace_id: workspace.id,
            name: "Client Meeting".into(),
            created_at: datetime!(2026-01-02 00:00 UTC),
        }];
        let start = datetime!(2026-01-05 09:00 UTC);
        let end = datetime!(2026-01-05 10:30 UTC);
        let entry = TimeEntry {
            id: TimeEntryId(id(7)),
            workspace_id: workspace.id,
            user_id: member.id,
            source: if action == EntryAction::ManualEntry {
                EntrySource::Manual
            } else {
                EntrySource::Timer
            },
            description: "Sample time entry".into(),
            project_id: Some(project.id),
            task_id: Some(task.id),
            tag_ids: vec![tags[0].id],
            billable: true,
            start,
            end: (action != EntryAction::StartTimer).then_some(end),
            created_at: if action == EntryAction::ManualEntry {
                end
            } else {
                start
            },
            updated_at: if action == EntryAction::StartTimer {
                start
            } else {
                end
            },
        };
        let ctx = EntryContext {
            workspace: &workspace,
            member: &member,
            project: Some(&project),
            task: Some(&task),
            tags: &tags,
        };
        super::time_entry(&entry, action, &ctx).expect("the sample entry is well-formed")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use time::macros::datetime;

    use super::*;
    use crate::ids::{ClientId, ProjectId, TagId, TimeEntryId, UserId, WorkspaceId};
    use crate::tracking::model::{ClientStatus, ClientType, EntrySource};

    fn workspace(tz: &str) -> Workspace {
        Workspace {
            id: WorkspaceId(Uuid::from_u128(1)),
            name: "Acme".into(),
            timezone: tz.into(),
            currency: "EUR".into(),
            created_at: datetime!(2026-01-01 00:00 UTC),
        }
    }

    fn member() -> User {
        User {
            id: UserId(Uuid::from_u128(2)),
            name: "Ada".into(),
            email: "ada@example.com".into(),
            created_at: datetime!(2026-01-01 00:00 UTC),
        }
    }

    fn entry(end: Option<time::OffsetDateTime>) -> TimeEntry {
        TimeEntry {
            id: TimeEntryId(Uuid::from_u128(3)),
            workspace_id: WorkspaceId(Uuid::from_u128(1)),
            user_id: UserId(Uuid::from_u128(2)),
            source: EntrySource::Timer,
            description: "Writing".into(),
            project_id: None,
            task_id: None,
            tag_ids: vec![],
            billable: false,
            start: datetime!(2026-03-01 23:30 UTC),
            end,
            created_at: datetime!(2026-03-01 23:30 UTC),
            updated_at: datetime!(2026-03-02 01:00:00.5 UTC),
        }
    }

    fn keys(value: &Value) -> Vec<&str> {
        value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect()
    }

    fn build(
        entry: &TimeEntry,
        action: EntryAction,
        tz: &str,
        project: Option<&Project>,
        tags: &[Tag],
    ) -> Value {
        let ws = workspace(tz);
        let m = member();
        let ctx = EntryContext {
            workspace: &ws,
            member: &m,
            project,
            task: None,
            tags,
        };
        serde_json::to_value(time_entry(entry, action, &ctx).unwrap()).unwrap()
    }

    const FULL_KEYS: [&str; 15] = [
        "id",
        "description",
        "date",
        "startTime",
        "endTime",
        "duration",
        "billable",
        "action",
        "workspace",
        "teamMember",
        "project",
        "task",
        "tags",
        "createdAt",
        "updatedAt",
    ];

    #[test]
    fn timer_started_has_no_end_time_or_duration_keys() {
        let v = build(&entry(None), EntryAction::StartTimer, "UTC", None, &[]);
        let expected: Vec<&str> = FULL_KEYS
            .iter()
            .copied()
            .filter(|k| *k != "endTime" && *k != "duration")
            .collect();
        assert_eq!(keys(&v), expected);
        assert_eq!(v["action"], "start_timer");
    }

    #[test]
    fn timer_stopped_has_every_field_with_exact_values() {
        let end = datetime!(2026-03-02 01:00 UTC);
        let v = build(&entry(Some(end)), EntryAction::StopTimer, "UTC", None, &[]);
        assert_eq!(keys(&v), FULL_KEYS);
        assert_eq!(
            v,
            json!({
                "id": Uuid::from_u128(3).to_string(),
                "description": "Writing",
                "date": "2026-03-01",
                "startTime": "2026-03-01T23:30:00Z",
                "endTime": "2026-03-02T01:00:00Z",
                "duration": 5400,
                "billable": false,
                "action": "stop_timer",
                "workspace": {"id": Uuid::from_u128(1).to_string(), "name": "Acme"},
                "teamMember": {"id": Uuid::from_u128(2).to_string(), "name": "Ada"},
                "project": null,
                "task": null,
                "tags": [],
                "createdAt": "2026-03-01T23:30:00Z",
                "updatedAt": "2026-03-02T01:00:00.5Z"
            })
        );
    }

    #[test]
    fn duration_is_end_minus_start_in_whole_seconds() {
        let e = entry(Some(datetime!(2026-03-02 00:31:07 UTC)));
        let v = build(&e, EntryAction::ManualEntry, "UTC", None, &[]);
        assert_eq!(v["duration"], 3667);
        assert_eq!(v["action"], "manual_entry");
        assert!(v["duration"].is_i64());
    }

    #[test]
    fn date_is_the_start_date_in_the_workspace_time_zone() {
        let e = entry(None); // starts 2026-03-01T23:30Z
        assert_eq!(
            build(&e, EntryAction::StartTimer, "UTC", None, &[])["date"],
            "2026-03-01"
        );
        assert_eq!(
            build(&e, EntryAction::StartTimer, "Europe/Berlin", None, &[])["date"],
            "2026-03-02"
        );
        assert_eq!(
            build(
                &e,
                EntryAction::StartTimer,
                "America/Los_Angeles",
                None,
                &[]
            )["date"],
            "2026-03-01"
        );
        assert_eq!(
            build(&e, EntryAction::StartTimer, "Pacific/Kiritimati", None, &[])["date"],
            "2026-03-02"
        );
    }

    #[test]
    fn project_and_tags_are_refs_when_set() {
        let project = Project {
            id: ProjectId(Uuid::from_u128(9)),
            workspace_id: WorkspaceId(Uuid::from_u128(1)),
            client_id: None,
            name: "Site".into(),
            created_at: datetime!(2026-01-01 00:00 UTC),
            updated_at: datetime!(2026-01-01 00:00 UTC),
        };
        let tags = [Tag {
            id: TagId(Uuid::from_u128(8)),
            workspace_id: WorkspaceId(Uuid::from_u128(1)),
            name: "urgent".into(),
            created_at: datetime!(2026-01-01 00:00 UTC),
        }];
        let v = build(
            &entry(None),
            EntryAction::StartTimer,
            "UTC",
            Some(&project),
            &tags,
        );
        assert_eq!(
            v["project"],
            json!({"id": Uuid::from_u128(9).to_string(), "name": "Site"})
        );
        assert_eq!(v["task"], Value::Null);
        assert_eq!(
            v["tags"],
            json!([{"id": Uuid::from_u128(8).to_string(), "name": "urgent"}])
        );
    }

    #[test]
    fn a_stop_payload_of_a_running_entry_is_a_bug() {
        let ws = workspace("UTC");
        let m = member();
        let ctx = EntryContext {
            workspace: &ws,
            member: &m,
            project: None,
            task: None,
            tags: &[],
        };
        assert!(matches!(
            time_entry(&entry(None), EntryAction::StopTimer, &ctx),
            Err(DomainError::Unexpected(_))
        ));
    }

    #[test]
    fn client_payload_has_the_event_fields_and_no_note_or_currency() {
        let client = Client {
            id: ClientId(Uuid::from_u128(5)),
            workspace_id: WorkspaceId(Uuid::from_u128(1)),
            name: "Globex".into(),
            client_type: ClientType::Individual,
            status: ClientStatus::Inactive,
            email: None,
            phone: Some("+44 20 7946 0000".into()),
            address: None,
            note: Some("secret note".into()),
            currency: "GBP".into(),
            created_at: datetime!(2026-02-01 08:00 UTC),
            updated_at: datetime!(2026-02-01 08:00 UTC),
        };
        let v = serde_json::to_value(client_created(&client, &workspace("UTC"))).unwrap();
        assert_eq!(
            v,
            json!({
                "id": Uuid::from_u128(5).to_string(),
                "name": "Globex",
                "email": null,
                "phone": "+44 20 7946 0000",
                "address": null,
                "status": "inactive",
                "type": "individual",
                "workspace": {"id": Uuid::from_u128(1).to_string(), "name": "Acme"},
                "createdAt": "2026-02-01T08:00:00Z",
                "updatedAt": "2026-02-01T08:00:00Z"
            })
        );
    }

    #[test]
    fn samples_are_identical_on_every_call_and_shaped_like_live_payloads() {
        let bodies = || {
            [
                to_body(&samples::client()).unwrap(),
                to_body(&samples::time_entry(EntryAction::StartTimer)).unwrap(),
                to_body(&samples::time_entry(EntryAction::StopTimer)).unwrap(),
                to_body(&samples::time_entry(EntryAction::ManualEntry)).unwrap(),
            ]
        };
        assert_eq!(bodies(), bodies());
        let stop: Value = serde_json::from_str(&bodies()[2]).unwrap();
        assert_eq!(keys(&stop), FULL_KEYS);
        assert_eq!(stop["action"], "stop_timer");
        assert_eq!(stop["duration"], 5400);
        let start: Value = serde_json::from_str(&bodies()[1]).unwrap();
        assert!(start.get("endTime").is_none() && start.get("duration").is_none());
        let manual: Value = serde_json::from_str(&bodies()[3]).unwrap();
        assert_eq!(manual["action"], "manual_entry");
    }

    #[test]
    fn changed_fields_are_the_differing_payload_fields_sorted_without_updated_at() {
        let before = json!({"id": "1", "name": "A", "tags": [], "updatedAt": "x", "b": 1});
        let after =
            json!({"id": "1", "name": "B", "tags": [{"id": "t"}], "updatedAt": "y", "b": 1});
        assert_eq!(changed_fields(&before, &after).unwrap(), ["name", "tags"]);
        // A field only one side has (an end a running timer gains) is a change.
        let running = json!({"id": "1", "updatedAt": "x"});
        let stopped = json!({"id": "1", "endTime": "z", "duration": 5, "updatedAt": "y"});
        assert_eq!(
            changed_fields(&running, &stopped).unwrap(),
            ["duration", "endTime"]
        );
        assert!(changed_fields(&before, &before).unwrap().is_empty());
        assert!(
            changed_fields(&json!(1), &json!(2)).is_err(),
            "payloads are objects"
        );
    }
}
