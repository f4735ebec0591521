//! Events: what happened in a workspace, recorded in the outbox with the change that caused it.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::{EventId, WorkspaceId};

/// The kinds of event a webhook subscription can listen to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    /// A timer started (payload without `endTime` and `duration`).
    TimerStarted,
    /// A running timer stopped.
    TimerStopped,
    /// A finished entry was created by hand (payload `action` = `manual_entry`).
    TimeEntryCreated,
    /// A client was created.
    ClientCreated,
    /// A time entry (finished or running) was changed by a PATCH (payload `action` = `update`,
    /// plus `changedFields`).
    TimeEntryUpdated,
    /// A time entry was deleted (payload as it was, `action` = `delete`).
    TimeEntryDeleted,
    /// A client was changed (plus `changedFields`).
    ClientUpdated,
    /// A client was deleted (payload as it was).
    ClientDeleted,
    /// A project was created.
    ProjectCreated,
    /// A project was changed (plus `changedFields`).
    ProjectUpdated,
    /// A project was deleted (payload as it was).
    ProjectDeleted,
    /// A webhook's deliveries have failed without a success for the configured time (once per
    /// failing streak); sent to the other webhooks of its workspace that list it.
    WebhookFailing,
    /// A webhook was disabled after failing for the configured time, or deleted because it
    /// answered `410 Gone`.
    WebhookDisabled,
    /// A failing webhook (one its owner was told about) received a delivery with a 2xx again.
    WebhookRecovered,
    /// A test delivery to one webhook, sent on its owner's request; not subscribable.
    WebhookTest,
    /// A draft invoice was created from tracked time (owners and admins only).
    InvoiceCreated,
    /// An invoice was issued with its number (owners and admins only).
    InvoiceIssued,
    /// An issued invoice was voided (owners and admins only).
    InvoiceVoided,
    /// An issued invoice's balance reached zero (owners and admins only).
    InvoicePaid,
    /// An issued invoice's due date passed with something left to pay; once per invoice (owners
    /// and admins only).
    InvoiceOverdue,
}

impl EventType {
    /// Every event type, in the order they are documented.
    pub const ALL: [EventType; 20] = [
        Self::TimerStarted,
        Self::TimerStopped,
        Self::TimeEntryCreated,
        Self::ClientCreated,
        Self::TimeEntryUpdated,
        Self::TimeEntryDeleted,
        Self::ClientUpdated,
        Self::ClientDeleted,
        Self::ProjectCreated,
        Self::ProjectUpdated,
        Self::ProjectDeleted,
        Self::WebhookFailing,
        Self::WebhookDisabled,
        Self::WebhookRecovered,
        Self::WebhookTest,
        Self::InvoiceCreated,
        Self::InvoiceIssued,
        Self::InvoiceVoided,
        Self::InvoicePaid,
        Self::InvoiceOverdue,
    ];

    /// The published name, e.g. `TIMER_STARTED`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TimerStarted => "TIMER_STARTED",
            Self::TimerStopped => "TIMER_STOPPED",
            Self::TimeEntryCreated => "TIME_ENTRY_CREATED",
            Self::ClientCreated => "CLIENT_CREATED",
            Self::TimeEntryUpdated => "TIME_ENTRY_UPDATED",
            Self::TimeEntryDeleted => "TIME_ENTRY_DELETED",
            Self::ClientUpdated => "CLIENT_UPDATED",
            Self::ClientDeleted => "CLIENT_DELETED",
            Self::ProjectCreated => "PROJECT_CREATED",
            Self::ProjectUpdated => "PROJECT_UPDATED",
            Self::ProjectDeleted => "PROJECT_DELETED",
            Self::WebhookFailing => "WEBHOOK_FAILING",
            Self::WebhookDisabled => "WEBHOOK_DISABLED",
            Self::WebhookRecovered => "WEBHOOK_RECOVERED",
            Self::WebhookTest => "WEBHOOK_TEST",
            Self::InvoiceCreated => "INVOICE_CREATED",
            Self::InvoiceIssued => "INVOICE_ISSUED",
            Self::InvoiceVoided => "INVOICE_VOIDED",
            Self::InvoicePaid => "INVOICE_PAID",
            Self::InvoiceOverdue => "INVOICE_OVERDUE",
        }
    }

    /// What it reports, as the event-type catalog says it.
    pub fn description(self) -> &'static str {
        match self {
            Self::TimerStarted => "A timer started (no endTime or duration yet).",
            Self::TimerStopped => "A running timer stopped.",
            Self::TimeEntryCreated => "A finished time entry was created by hand.",
            Self::ClientCreated => "A client was created.",
            Self::TimeEntryUpdated => {
                "A time entry, finished or running, was changed; changedFields names what changed."
            }
            Self::TimeEntryDeleted => {
                "A time entry was deleted; the payload is the entry as it was."
            }
            Self::ClientUpdated => "A client was changed; changedFields names what changed.",
            Self::ClientDeleted => "A client was deleted; the payload is the client as it was.",
            Self::ProjectCreated => "A project was created.",
            Self::ProjectUpdated => "A project was changed; changedFields names what changed.",
            Self::ProjectDeleted => "A project was deleted; the payload is the project as it was.",
            Self::WebhookFailing => {
                "One of the owner's webhooks has failed without a success for the configured time."
            }
            Self::WebhookDisabled => {
                "One of the owner's webhooks was disabled (failing) or deleted after a 410 (gone)."
            }
            Self::WebhookRecovered => "A webhook its owner was told was failing succeeded again.",
            Self::WebhookTest => {
                "A test delivery to one webhook, on its owner's request; not subscribable."
            }
            Self::InvoiceCreated => {
                "A draft invoice was created from tracked time; owners and admins only."
            }
            Self::InvoiceIssued => "An invoice was issued with its number; owners and admins only.",
            Self::InvoiceVoided => "An issued invoice was voided; owners and admins only.",
            Self::InvoicePaid => {
                "An issued invoice's balance reached zero; owners and admins only."
            }
            Self::InvoiceOverdue => {
                "An issued invoice's due date passed with something left to pay (once per \
                 invoice); owners and admins only."
            }
        }
    }

    /// Whether a subscription may list it (every type but `WEBHOOK_TEST`).
    pub fn is_subscribable(self) -> bool {
        self != Self::WebhookTest
    }

    /// Whether it is about a time entry.
    pub fn is_time_entry(self) -> bool {
        matches!(
            self,
            Self::TimerStarted
                | Self::TimerStopped
                | Self::TimeEntryCreated
                | Self::TimeEntryUpdated
                | Self::TimeEntryDeleted
        )
    }

    /// Whether it is about a client.
    pub fn is_client(self) -> bool {
        matches!(
            self,
            Self::ClientCreated | Self::ClientUpdated | Self::ClientDeleted
        )
    }

    /// Whether it is about a project.
    pub fn is_project(self) -> bool {
        matches!(
            self,
            Self::ProjectCreated | Self::ProjectUpdated | Self::ProjectDeleted
        )
    }

    /// Whether it is about an invoice: only owners and admins may subscribe to it, read it in
    /// the feed, or have it delivered.
    pub fn is_invoice(self) -> bool {
        matches!(
            self,
            Self::InvoiceCreated
                | Self::InvoiceIssued
                | Self::InvoiceVoided
                | Self::InvoicePaid
                | Self::InvoiceOverdue
        )
    }

    /// The types a subscription may list, in the order they are documented.
    pub fn subscribable() -> impl Iterator<Item = EventType> {
        Self::ALL.into_iter().filter(|t| t.is_subscribable())
    }

    /// Parses a published name; exact spelling only.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// What an event is about, as subscription filters see it (`events.md` section 3): `None` where
/// the event has no such value (it matches no filter on it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventSubject {
    /// A time entry's project.
    pub project_id: Option<crate::ids::ProjectId>,
    /// A client event's client, or a time entry's project's client.
    pub client_id: Option<crate::ids::ClientId>,
    /// A time entry's member (`teamMember`).
    pub user_id: Option<crate::ids::UserId>,
    /// Whether a time entry is billable.
    pub billable: Option<bool>,
}

/// An event as stored in the outbox: its body is the exact JSON delivered to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Identifier; the `webhook-id` of every delivery of this event.
    pub id: EventId,
    /// The workspace the event belongs to; its subscriptions receive it.
    pub workspace_id: WorkspaceId,
    /// What happened.
    pub event_type: EventType,
    /// The payload, serialized once.
    pub body: String,
    /// When it happened.
    pub created_at: OffsetDateTime,
    /// What it is about, for subscription filters.
    pub subject: EventSubject,
    /// The entity it is about (the time entry, client or project id; the webhook's, for a
    /// notice or a test): a subscription gets one entity's events in the order they were
    /// recorded (`webhook-ordering-key`).
    pub ordering_key: String,
}

/// An event of `event_type` in `workspace` about the entity `ordering_key`, its body the
/// serialized `payload`.
pub(crate) fn event_of(
    id: EventId,
    workspace: WorkspaceId,
    event_type: EventType,
    payload: &impl Serialize,
    created_at: OffsetDateTime,
    subject: EventSubject,
    ordering_key: impl std::fmt::Display,
) -> crate::error::DomainResult<Event> {
    Ok(Event {
        id,
        workspace_id: workspace,
        event_type,
        body: crate::webhooks::payload::to_body(payload)?,
        created_at,
        subject,
        ordering_key: ordering_key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
        }
        assert_eq!(EventType::parse("timer_started"), None);
        assert_eq!(EventType::parse("TIMER_STARTED "), None);
    }
}
