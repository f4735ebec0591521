//! In-memory fakes of the domain's ports, for the domain's tests and for unit tests of code built
//! on it. The contract suites in `crates/adapters/tests/contracts/` hold them to the same rules
//! as the PostgreSQL adapters.
//!
//! Available without the `infra` feature, so that testing the domain links no I/O framework.
//! Nothing here does I/O: time is set by hand, ids count up,
//! randomness is seeded, and storage is a map behind a mutex.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use timetrack_domain::error::{DomainError, DomainResult};
use timetrack_domain::ids::{
    ApiKeyId, ClientId, EventId, ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId,
};
use timetrack_domain::masked::Masks;
use timetrack_domain::model::{
    ApiKey, AttemptSummary, AuditEntry, Client, Cursor, DeliveryDetail, DeliveryId, DeliveryKind,
    DeliveryQuery, DeliveryRecord, DeliveryStatus, DisabledReason, EntrySource, Event, EventType,
    FeedEvent, FeedPosition, FeedRead, HourlyStats, KeyHash, Page, PageRequest, Project,
    ReplayOutcome, ReplayWindow, Subscription, SubscriptionChange, SubscriptionFilters,
    SubscriptionStatus, Tag, Task, TimeEntry, User, WebhookId, Workspace,
};
use timetrack_domain::model::{ListFilter, Member, Role, WorkspaceSettings};
use timetrack_domain::ports::{
    ApiKeyRepository, CatalogRepository, ClientRepository, Clock, DeliveryLog, EntryFilter,
    EventFeed, HostResolver, IDEMPOTENCY_RETENTION, IdGenerator, IdempotencyBegin,
    IdempotencyStore, RandomSource, STALE_CLAIM, SubscriptionRepository, TimeEntryRepository,
    TimerStop, UserRepository, WorkspaceRepository, WriteOutcome,
};
use timetrack_domain::ports::{LAST_OWNER, ROLE_CHANGED};
use timetrack_domain::services::{
    AdminService, CatalogService, ClientService, NewWorkspace, TimeEntryService, WebhookService,
    WebhookSettings,
};
use timetrack_domain::values::{Email, Name};

mod accounts;
mod catalog;
mod clients;
mod delivery_log;
mod feed;
mod idempotency;
mod queue;
mod rates;
mod subscriptions;
mod system;
mod time_entries;
mod world;

pub use system::{ManualClock, SeededRandom, SequentialIds, StaticResolver};
pub use world::{TestWorld, email, name, run_ready};

/// A user's membership of a workspace.
#[derive(Debug, Clone)]
struct Membership {
    workspace: WorkspaceId,
    user: UserId,
    role: Role,
    at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

#[derive(Debug, Default)]
struct Tables {
    workspaces: HashMap<WorkspaceId, Workspace>,
    users: HashMap<UserId, User>,
    memberships: Vec<Membership>,
    settings: HashMap<WorkspaceId, WorkspaceSettings>,
    rates: Vec<timetrack_domain::model::Rate>,
    prices: HashMap<TimeEntryId, timetrack_domain::model::StoredPrice>,
    keys: HashMap<ApiKeyId, (ApiKey, KeyHash)>,
    clients: Vec<Client>,
    events: Vec<Event>,
    subscriptions: Vec<Subscription>,
    deliveries: Vec<(WebhookId, DeliveryRecord)>,
    audit: Vec<AuditEntry>,
    projects: Vec<Project>,
    tasks: Vec<Task>,
    tags: Vec<Tag>,
    entries: Vec<TimeEntry>,
    /// Each event's place in the feed and who may see it (`None`: every member).
    placed: HashMap<EventId, (FeedPosition, Option<UserId>)>,
    /// Transactions (writes that recorded events) so far: the feed's transaction ids.
    transactions: i64,
    /// Events recorded so far: the feed's sequence.
    sequence: i64,
    /// Idempotency keys by API key and key.
    idempotency: HashMap<(ApiKeyId, String), IdempotencyRow>,
    /// Each subscription's signing secret before its latest rotation.
    previous_secrets: HashMap<WebhookId, String>,
    /// The type each test event sent as another type is sent as.
    sent_as: HashMap<EventId, EventType>,
    /// The queue's leases: until when each leased delivery is held.
    leases: HashMap<DeliveryId, OffsetDateTime>,
    /// Retries whose receiver asked to wait (`Retry-After`), with the time it asked for.
    not_before: HashMap<DeliveryId, OffsetDateTime>,
    /// Each subscription's failure streak, while it has one or is being brought back.
    streaks: HashMap<WebhookId, queue::StoredStreak>,
}

/// One idempotency key's use.
#[derive(Debug, Clone)]
struct IdempotencyRow {
    fingerprint: [u8; 32],
    /// The stored response, once the request finished.
    response: Option<(u16, String)>,
    created_at: OffsetDateTime,
}

/// One in-memory store implementing every repository port.
#[derive(Debug, Default)]
pub struct InMemoryStore(Mutex<Tables>);

impl InMemoryStore {
    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Number of stored workspaces.
    pub fn workspace_count(&self) -> usize {
        self.tables().workspaces.len()
    }

    /// The hash stored for a key.
    pub fn stored_hash(&self, id: ApiKeyId) -> Option<KeyHash> {
        self.tables().keys.get(&id).map(|(_, hash)| *hash)
    }

    /// Every event recorded in the outbox, oldest first.
    pub fn events(&self) -> Vec<Event> {
        self.tables().events.clone()
    }

    /// Every audit row, oldest first.
    pub fn audit(&self) -> Vec<AuditEntry> {
        self.tables().audit.clone()
    }

    /// Adds a delivery record for `subscription`, as the outbox would.
    pub fn add_delivery(&self, subscription: &WebhookId, record: DeliveryRecord) {
        self.tables()
            .deliveries
            .push((subscription.clone(), record));
    }

    /// The status of every delivery of `subscription`, in the order they were added.
    pub fn delivery_statuses(&self, subscription: &WebhookId) -> Vec<DeliveryStatus> {
        self.tables()
            .deliveries
            .iter()
            .filter(|(s, _)| s == subscription)
            .map(|(_, record)| record.status)
            .collect()
    }

    /// Every delivery of `subscription`, in the order they were added.
    pub fn deliveries_of(&self, subscription: &WebhookId) -> Vec<DeliveryRecord> {
        self.tables()
            .deliveries
            .iter()
            .filter(|(s, _)| s == subscription)
            .map(|(_, record)| record.clone())
            .collect()
    }

    /// Records `event` as the outbox would, without deliveries.
    pub fn add_event(&self, event: Event) {
        let mut t = self.tables();
        t.place(std::slice::from_ref(&event), None);
        t.events.push(event);
    }

    /// Marks `subscription` disabled, as the delivery worker would after failing for too long.
    pub fn disable(&self, subscription: &WebhookId) {
        let mut t = self.tables();
        if let Some(s) = t.subscriptions.iter_mut().find(|s| &s.id == subscription) {
            s.status = SubscriptionStatus::Disabled;
            s.disabled_reason = Some(DisabledReason::Failing);
        }
    }

    /// The recorded last use of a key.
    pub fn last_used(&self, id: ApiKeyId) -> Option<OffsetDateTime> {
        self.tables()
            .keys
            .get(&id)
            .and_then(|(k, _)| k.last_used_at)
    }
}

fn newest_first(clients: &mut [Client]) {
    clients.sort_by_key(|c| std::cmp::Reverse((c.created_at, c.id)));
}

fn client_position(client: &Client) -> Cursor {
    Cursor {
        created_at: client.created_at,
        id: client.id.0,
    }
}

fn page_of<T: Clone>(
    mut items: Vec<T>,
    page: PageRequest,
    position: impl Fn(&T) -> Cursor,
) -> Page<T> {
    items.sort_by_key(|i| {
        let p = position(i);
        std::cmp::Reverse((p.created_at, p.id))
    });
    items.retain(|i| {
        let p = position(i);
        page.after
            .is_none_or(|after| (p.created_at, p.id) < (after.created_at, after.id))
    });
    items.truncate(page.limit as usize + 1);
    Page::from_overfetch(items, page.limit, position)
}

/// `entry` as the database keeps it: its tags come back in id order, whatever order they were
/// written in.
fn as_stored(entry: &TimeEntry) -> TimeEntry {
    let mut stored = entry.clone();
    stored.tag_ids.sort_unstable();
    stored
}

impl Tables {
    /// Gives `events`, written by one transaction, their places in the feed (each write commits
    /// at once here, so every place is below the horizon as soon as it is given), shown to
    /// `visible_to` alone if set.
    fn place(&mut self, events: &[Event], visible_to: Option<UserId>) {
        self.transactions += 1;
        for event in events {
            self.sequence += 1;
            let position = FeedPosition {
                txid: self.transactions,
                seq: self.sequence,
            };
            self.placed.insert(event.id, (position, visible_to));
        }
    }

    fn next_delivery_id(&self) -> DeliveryId {
        DeliveryId(
            self.deliveries
                .iter()
                .map(|(_, d)| d.id.0)
                .max()
                .unwrap_or(0)
                + 1,
        )
    }

    /// A new pending delivery of `event` to `subscription`.
    fn queue(
        &mut self,
        subscription: &WebhookId,
        event: &Event,
        kind: DeliveryKind,
        at: OffsetDateTime,
    ) -> DeliveryRecord {
        let record = DeliveryRecord {
            id: self.next_delivery_id(),
            event_id: event.id,
            // A test sent as another type is that type; a resend of it is a WEBHOOK_TEST.
            event_type: self
                .sent_as
                .get(&event.id)
                .copied()
                .filter(|_| kind == DeliveryKind::Test)
                .unwrap_or(event.event_type),
            kind,
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: Some(at),
            last_attempt_at: None,
            last_status_code: None,
            last_error: None,
            created_at: at,
            updated_at: at,
        };
        self.deliveries.push((subscription.clone(), record.clone()));
        record
    }

    /// Records `events` as the outbox does: each, and one pending delivery of it for each active
    /// subscription of its workspace that lists its type.
    fn record(&mut self, events: &[Event]) {
        self.place(events, None);
        for event in events {
            self.events.push(event.clone());
            let listeners: Vec<WebhookId> = self
                .subscriptions
                .iter()
                .filter(|s| {
                    s.workspace_id == event.workspace_id
                        && s.status == SubscriptionStatus::Active
                        && s.events.contains(&event.event_type)
                        && s.filters.matches(&event.subject)
                })
                .map(|s| s.id.clone())
                .collect();
            for subscription in listeners {
                self.queue(&subscription, event, DeliveryKind::Event, event.created_at);
            }
        }
    }

    /// Whether the key exists and is not revoked.
    fn key_live(&self, key: ApiKeyId) -> bool {
        self.keys
            .get(&key)
            .is_some_and(|(key, _)| key.revoked_at.is_none())
    }

    fn live_subscription(&self, id: &WebhookId) -> Option<&Subscription> {
        self.subscriptions
            .iter()
            .find(|s| &s.id == id && s.status != SubscriptionStatus::Deleted)
    }
}

impl Tables {
    fn apply_stop(&mut self, stop: &TimerStop) -> bool {
        match self
            .entries
            .iter_mut()
            .find(|e| e.id == stop.entry && e.end.is_none())
        {
            Some(entry) => {
                entry.end = Some(stop.end);
                entry.updated_at = stop.event.created_at;
                self.record(std::slice::from_ref(&stop.event));
                true
            }
            None => false,
        }
    }

    /// Refuses a project whose client is not one of its workspace's, as the foreign key does.
    fn check_client(&self, project: &Project) -> DomainResult<()> {
        match project.client_id {
            Some(client)
                if !self
                    .clients
                    .iter()
                    .any(|c| c.id == client && c.workspace_id == project.workspace_id) =>
            {
                Err(DomainError::validation(
                    "client_id does not name a client of this workspace",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Whether `user` is a member of `workspace`.
    fn is_member(&self, workspace: WorkspaceId, user: UserId) -> bool {
        self.memberships
            .iter()
            .any(|m| m.workspace == workspace && m.user == user)
    }

    /// Refuses what the database's composite foreign keys refuse in an entry, in the order it
    /// checks them: its user must be a member of its workspace (an unexpected failure: no caller
    /// gets there), its project and task the workspace's (the task of that project), its tags
    /// the workspace's and each named once.
    fn check_references(&self, entry: &TimeEntry) -> DomainResult<()> {
        let ws = entry.workspace_id;
        if !self.is_member(ws, entry.user_id) {
            return Err(DomainError::Unexpected(
                std::io::Error::other("time entry of a user who is not a member").into(),
            ));
        }
        if let Some(project) = entry.project_id {
            if !self
                .projects
                .iter()
                .any(|p| p.workspace_id == ws && p.id == project)
            {
                return Err(DomainError::validation(
                    "project_id does not name a project of this workspace",
                ));
            }
            if let Some(task) = entry.task_id
                && !self
                    .tasks
                    .iter()
                    .any(|t| t.workspace_id == ws && t.project_id == project && t.id == task)
            {
                return Err(DomainError::validation(
                    "task_id does not belong to project_id",
                ));
            }
        }
        let mut seen = Vec::with_capacity(entry.tag_ids.len());
        for tag in &entry.tag_ids {
            let ours = self
                .tags
                .iter()
                .any(|t| t.workspace_id == ws && t.id == *tag);
            if !ours || seen.contains(tag) {
                return Err(DomainError::validation(
                    "tag_ids contains an id that is not a tag of this workspace",
                ));
            }
            seen.push(*tag);
        }
        Ok(())
    }
}
