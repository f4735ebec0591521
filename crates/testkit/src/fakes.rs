//! In-memory fakes of the domain's ports, for the domain's tests and for unit tests of code built
//! on it. The contract suites in `crates/adapters/tests/contracts.rs` hold them to the same rules
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
    ApiKeyId, ClientId, ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId,
};
use timetrack_domain::masked::Masks;
use timetrack_domain::model::{
    ApiKey, AttemptSummary, AuditEntry, Client, Cursor, DeliveryDetail, DeliveryId, DeliveryKind,
    DeliveryQuery, DeliveryRecord, DeliveryStatus, EntrySource, Event, HourlyStats, KeyHash, Page,
    PageRequest, Project, ReplayOutcome, ReplayWindow, Subscription, SubscriptionChange,
    SubscriptionFilters, SubscriptionStatus, Tag, Task, TimeEntry, User, WebhookId, Workspace,
};
use timetrack_domain::ports::{
    ApiKeyRepository, CatalogRepository, ClientRepository, Clock, DeliveryLog, EntryFilter,
    HostResolver, IdGenerator, RandomSource, SubscriptionRepository, TimeEntryRepository,
    TimerStop, UserRepository, WorkspaceRepository, WriteOutcome,
};
use timetrack_domain::services::{
    AdminService, CatalogService, ClientService, NewWorkspace, TimeEntryService, WebhookService,
    WebhookSettings,
};
use timetrack_domain::values::{Email, Name};

/// A clock that stands still until told to move.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    /// A clock showing `at`.
    pub fn at(at: OffsetDateTime) -> Self {
        Self(Mutex::new(at))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ids `00000000-0000-0000-0000-000000000001`, `...02`, and so on.
#[derive(Debug, Default)]
pub struct SequentialIds(AtomicU64);

impl IdGenerator for SequentialIds {
    fn new_uuid(&self) -> Uuid {
        Uuid::from_u128(u128::from(self.0.fetch_add(1, Ordering::Relaxed) + 1))
    }
}

/// A deterministic, non-cryptographic byte stream (xorshift64*), for reproducible tests.
#[derive(Debug)]
pub struct SeededRandom(Mutex<u64>);

impl SeededRandom {
    /// A stream starting from `seed` (0 is replaced by 1).
    pub fn new(seed: u64) -> Self {
        Self(Mutex::new(seed.max(1)))
    }
}

impl RandomSource for SeededRandom {
    fn fill(&self, buf: &mut [u8]) {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for byte in buf {
            *state ^= *state >> 12;
            *state ^= *state << 25;
            *state ^= *state >> 27;
            *byte = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8;
        }
    }
}

#[derive(Debug, Default)]
struct Tables {
    workspaces: HashMap<WorkspaceId, Workspace>,
    users: HashMap<UserId, User>,
    memberships: Vec<(WorkspaceId, UserId)>,
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
        self.tables().events.push(event);
    }

    /// Marks `subscription` disabled, as the delivery worker would after failing for too long.
    pub fn disable(&self, subscription: &WebhookId) {
        let mut t = self.tables();
        if let Some(s) = t.subscriptions.iter_mut().find(|s| &s.id == subscription) {
            s.status = SubscriptionStatus::Disabled;
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

#[async_trait]
impl WorkspaceRepository for InMemoryStore {
    async fn create(&self, workspace: &Workspace) -> DomainResult<()> {
        let mut t = self.tables();
        if t.workspaces.contains_key(&workspace.id) {
            return Err(DomainError::Conflict("workspace exists".into()));
        }
        t.workspaces.insert(workspace.id, workspace.clone());
        Ok(())
    }

    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>> {
        Ok(self.tables().workspaces.get(&id).cloned())
    }
}

#[async_trait]
impl UserRepository for InMemoryStore {
    async fn create_member(
        &self,
        user: &User,
        workspace: WorkspaceId,
        _at: OffsetDateTime,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        if !t.workspaces.contains_key(&workspace) {
            return Err(DomainError::NotFound("workspace"));
        }
        let email = user.email.to_lowercase();
        if t.users.values().any(|u| u.email.to_lowercase() == email) {
            return Err(DomainError::Conflict("e-mail already in use".into()));
        }
        t.users.insert(user.id, user.clone());
        t.memberships.push((workspace, user.id));
        Ok(())
    }

    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        _at: OffsetDateTime,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        if !t.workspaces.contains_key(&workspace) {
            return Err(DomainError::NotFound("workspace"));
        }
        if t.memberships.contains(&(workspace, user)) {
            return Err(DomainError::Conflict(
                "user is already a member of the workspace".into(),
            ));
        }
        t.memberships.push((workspace, user));
        Ok(())
    }

    async fn find_by_email(&self, email: &str) -> DomainResult<Option<User>> {
        let email = email.to_lowercase();
        Ok(self
            .tables()
            .users
            .values()
            .find(|u| u.email.to_lowercase() == email)
            .cloned())
    }

    async fn get(&self, id: UserId) -> DomainResult<Option<User>> {
        Ok(self.tables().users.get(&id).cloned())
    }
}

#[async_trait]
impl ApiKeyRepository for InMemoryStore {
    async fn create(&self, key: &ApiKey, hash: &KeyHash) -> DomainResult<()> {
        let mut t = self.tables();
        if !t.memberships.contains(&(key.workspace_id, key.user_id)) {
            return Err(DomainError::NotFound("membership"));
        }
        t.keys.insert(key.id, (key.clone(), *hash));
        Ok(())
    }

    async fn find_active_by_hash(&self, hash: &KeyHash) -> DomainResult<Option<ApiKey>> {
        Ok(self
            .tables()
            .keys
            .values()
            .find(|(k, h)| h == hash && k.revoked_at.is_none())
            .map(|(k, _)| k.clone()))
    }

    async fn active_hashes(&self) -> DomainResult<Vec<KeyHash>> {
        Ok(self
            .tables()
            .keys
            .values()
            .filter(|(k, _)| k.revoked_at.is_none())
            .map(|(_, h)| *h)
            .collect())
    }

    async fn record_use(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<()> {
        if let Some((key, _)) = self.tables().keys.get_mut(&id) {
            key.last_used_at = Some(at);
        }
        Ok(())
    }

    async fn revoke(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<ApiKey> {
        let mut t = self.tables();
        let (key, _) = t
            .keys
            .get_mut(&id)
            .ok_or(DomainError::NotFound("api key"))?;
        key.revoked_at.get_or_insert(at);
        let key = key.clone();
        // As the port says: the key's active subscriptions are disabled, and their pending
        // deliveries cancelled, with the revocation.
        let mut disabled = Vec::new();
        for subscription in t
            .subscriptions
            .iter_mut()
            .filter(|s| s.api_key_id == id && s.status == SubscriptionStatus::Active)
        {
            subscription.status = SubscriptionStatus::Disabled;
            subscription.updated_at = at;
            disabled.push(subscription.id.clone());
        }
        for (subscription, record) in &mut t.deliveries {
            if disabled.contains(subscription) && record.status == DeliveryStatus::Pending {
                record.status = DeliveryStatus::Cancelled;
            }
        }
        Ok(key)
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

#[async_trait]
impl ClientRepository for InMemoryStore {
    async fn create(&self, client: &Client, events: &[Event]) -> DomainResult<()> {
        let mut t = self.tables();
        let key = Client::name_key(&client.name);
        if let Some(existing) = t
            .clients
            .iter()
            .find(|c| c.workspace_id == client.workspace_id && Client::name_key(&c.name) == key)
        {
            return Err(DomainError::AlreadyExists {
                what: "client",
                id: existing.id.to_string(),
            });
        }
        t.clients.push(client.clone());
        t.record(events);
        Ok(())
    }

    async fn get(&self, workspace: WorkspaceId, id: ClientId) -> DomainResult<Option<Client>> {
        Ok(self
            .tables()
            .clients
            .iter()
            .find(|c| c.workspace_id == workspace && c.id == id)
            .cloned())
    }

    async fn list(&self, workspace: WorkspaceId, page: PageRequest) -> DomainResult<Page<Client>> {
        let mut clients: Vec<Client> = self
            .tables()
            .clients
            .iter()
            .filter(|c| c.workspace_id == workspace)
            .filter(|c| {
                page.after
                    .is_none_or(|after| (c.created_at, c.id.0) < (after.created_at, after.id))
            })
            .cloned()
            .collect();
        newest_first(&mut clients);
        clients.truncate(page.limit as usize + 1);
        Ok(Page::from_overfetch(clients, page.limit, client_position))
    }

    async fn search(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Client>> {
        let mut found: Vec<Client> = self
            .tables()
            .clients
            .iter()
            .filter(|c| c.workspace_id == workspace && Client::name_key(&c.name).contains(needle))
            .cloned()
            .collect();
        newest_first(&mut found);
        found.truncate(limit as usize);
        Ok(found)
    }

    async fn newest(&self, workspace: WorkspaceId) -> DomainResult<Option<Client>> {
        Ok(self.search(workspace, "", 1).await?.pop())
    }

    async fn update(
        &self,
        before: &Client,
        after: &Client,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        let key = Client::name_key(&after.name);
        if let Some(other) = t.clients.iter().find(|c| {
            c.workspace_id == after.workspace_id
                && c.id != after.id
                && Client::name_key(&c.name) == key
        }) {
            return Err(DomainError::AlreadyExists {
                what: "client",
                id: other.id.to_string(),
            });
        }
        let Some(stored) = t.clients.iter_mut().find(|c| {
            c.id == before.id
                && c.workspace_id == before.workspace_id
                && c.updated_at == before.updated_at
        }) else {
            return Ok(WriteOutcome::Raced);
        };
        *stored = after.clone();
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn delete(&self, client: &Client, events: &[Event]) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        if t.projects
            .iter()
            .any(|p| p.workspace_id == client.workspace_id && p.client_id == Some(client.id))
        {
            return Err(DomainError::Conflict("Client is used by projects".into()));
        }
        let before = t.clients.len();
        t.clients.retain(|c| {
            !(c.workspace_id == client.workspace_id
                && c.id == client.id
                && c.updated_at == client.updated_at)
        });
        if t.clients.len() == before {
            return Ok(WriteOutcome::Raced);
        }
        t.record(events);
        Ok(WriteOutcome::Applied)
    }
}

#[async_trait]
impl SubscriptionRepository for InMemoryStore {
    async fn create(&self, subscription: &Subscription, max_active: u32) -> DomainResult<()> {
        let mut t = self.tables();
        let revoked = t
            .keys
            .get(&subscription.api_key_id)
            .is_some_and(|(key, _)| key.revoked_at.is_some());
        if revoked {
            return Err(DomainError::Unauthorized);
        }
        let active = t
            .subscriptions
            .iter()
            .filter(|s| {
                s.workspace_id == subscription.workspace_id
                    && s.status == SubscriptionStatus::Active
            })
            .count();
        if active >= max_active as usize {
            return Err(DomainError::Conflict("Subscription limit reached".into()));
        }
        t.subscriptions.push(subscription.clone());
        Ok(())
    }

    async fn get(&self, id: &WebhookId) -> DomainResult<Option<Subscription>> {
        Ok(self
            .tables()
            .subscriptions
            .iter()
            .find(|s| &s.id == id)
            .cloned())
    }

    async fn list(&self, workspace: WorkspaceId, user: UserId) -> DomainResult<Vec<Subscription>> {
        let mut found: Vec<Subscription> = self
            .tables()
            .subscriptions
            .iter()
            .filter(|s| {
                s.workspace_id == workspace
                    && s.user_id == user
                    && s.status != SubscriptionStatus::Deleted
            })
            .cloned()
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse((s.created_at, s.id.to_string())));
        Ok(found)
    }

    async fn update(
        &self,
        id: &WebhookId,
        change: &SubscriptionChange,
        audit: &AuditEntry,
    ) -> DomainResult<Subscription> {
        let mut t = self.tables();
        let stored = t
            .subscriptions
            .iter_mut()
            .find(|s| &s.id == id && s.status != SubscriptionStatus::Deleted)
            .ok_or(DomainError::NotFound("webhook"))?;
        if let Some(url) = &change.url {
            stored.url.clone_from(url);
        }
        if let Some(events) = &change.events {
            stored.events.clone_from(events);
        }
        if let Some(description) = &change.description {
            stored.description.clone_from(description);
        }
        if let Some(filters) = &change.filters {
            stored.filters.clone_from(filters);
        }
        stored.updated_at = change.updated_at;
        let stored = stored.clone();
        t.audit.push(audit.clone());
        Ok(stored)
    }

    async fn enable(
        &self,
        id: &WebhookId,
        max_active: u32,
        audit: &AuditEntry,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        let Some(found) = t
            .subscriptions
            .iter()
            .find(|s| &s.id == id && s.status != SubscriptionStatus::Deleted)
            .cloned()
        else {
            return Err(DomainError::NotFound("webhook"));
        };
        if found.status == SubscriptionStatus::Active {
            return Ok(());
        }
        if !t.key_live(found.api_key_id) {
            return Err(DomainError::Conflict("API key revoked".into()));
        }
        let active = t
            .subscriptions
            .iter()
            .filter(|s| {
                s.workspace_id == found.workspace_id && s.status == SubscriptionStatus::Active
            })
            .count();
        if active >= max_active as usize {
            return Err(DomainError::Conflict("Subscription limit reached".into()));
        }
        if let Some(stored) = t.subscriptions.iter_mut().find(|s| &s.id == id) {
            stored.status = SubscriptionStatus::Active;
            stored.updated_at = audit.at;
        }
        t.audit.push(audit.clone());
        Ok(())
    }

    /// The fake keeps no attempts: 24 empty hours.
    async fn hourly_stats(
        &self,
        _id: &WebhookId,
        now: OffsetDateTime,
    ) -> DomainResult<Vec<HourlyStats>> {
        let hour = now
            .replace_minute(0)
            .and_then(|t| t.replace_second(0))
            .and_then(|t| t.replace_nanosecond(0))
            .map_err(|e| DomainError::Unexpected(std::io::Error::other(e).into()))?;
        Ok((0..24)
            .rev()
            .map(|back| HourlyStats {
                start: hour - Duration::hours(back),
                delivered: 0,
                failed: 0,
                p50_ms: None,
                p95_ms: None,
            })
            .collect())
    }

    /// The fake keeps delivery records but no attempts: it knows the pending deliveries and
    /// reports no attempt.
    async fn attempt_summary(&self, id: &WebhookId) -> DomainResult<AttemptSummary> {
        let pending = self
            .tables()
            .deliveries
            .iter()
            .filter(|(sub, record)| sub == id && record.status == DeliveryStatus::Pending)
            .count();
        Ok(AttemptSummary {
            pending_deliveries: pending as u64,
            ..AttemptSummary::default()
        })
    }

    async fn delete(&self, id: &WebhookId, audit: &AuditEntry) -> DomainResult<()> {
        let mut t = self.tables();
        let subscription = t
            .subscriptions
            .iter_mut()
            .find(|s| &s.id == id)
            .ok_or(DomainError::NotFound("webhook"))?;
        if subscription.status == SubscriptionStatus::Deleted {
            return Ok(());
        }
        subscription.status = SubscriptionStatus::Deleted;
        subscription.updated_at = audit.at;
        for (sub, record) in &mut t.deliveries {
            if sub == id && record.status == DeliveryStatus::Pending {
                record.status = DeliveryStatus::Cancelled;
            }
        }
        t.audit.push(audit.clone());
        Ok(())
    }

    async fn filter_id_outside(
        &self,
        workspace: WorkspaceId,
        filters: &SubscriptionFilters,
    ) -> DomainResult<Option<(&'static str, Uuid)>> {
        let t = self.tables();
        let projects = filters
            .project_ids
            .iter()
            .flatten()
            .map(|p| ("project_ids", p.0));
        let clients = filters
            .client_ids
            .iter()
            .flatten()
            .map(|c| ("client_ids", c.0));
        let users = filters.user_ids.iter().flatten().map(|u| ("user_ids", u.0));
        Ok(projects.chain(clients).chain(users).find(|(name, id)| {
            let known = match *name {
                "project_ids" => t
                    .projects
                    .iter()
                    .any(|p| p.id.0 == *id && p.workspace_id == workspace),
                "client_ids" => t
                    .clients
                    .iter()
                    .any(|c| c.id.0 == *id && c.workspace_id == workspace),
                _ => t
                    .memberships
                    .iter()
                    .any(|(w, u)| *w == workspace && u.0 == *id),
            };
            !known
        }))
    }

    async fn rotate_secret(
        &self,
        id: &WebhookId,
        secret: &str,
        previous_expires_at: OffsetDateTime,
        audit: &AuditEntry,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        let stored = t
            .subscriptions
            .iter_mut()
            .find(|s| &s.id == id && s.status != SubscriptionStatus::Deleted)
            .ok_or(DomainError::NotFound("webhook"))?;
        stored.secret = secret.to_owned();
        stored.previous_secret_expires_at =
            (previous_expires_at > audit.at).then_some(previous_expires_at);
        stored.updated_at = audit.at;
        t.audit.push(audit.clone());
        Ok(())
    }
}

impl Tables {
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
            event_type: event.event_type,
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

/// The fake keeps no attempts: a delivery's detail lists none.
#[async_trait]
impl DeliveryLog for InMemoryStore {
    async fn deliveries(
        &self,
        id: &WebhookId,
        query: &DeliveryQuery,
    ) -> DomainResult<Vec<DeliveryRecord>> {
        let mut found: Vec<DeliveryRecord> = self
            .tables()
            .deliveries
            .iter()
            .filter(|(sub, r)| {
                sub == id
                    && r.created_at >= query.since
                    && query.status.is_none_or(|s| r.status == s)
                    && query.event_type.is_none_or(|t| r.event_type == t)
                    && query.before.is_none_or(|b| r.id < b)
            })
            .map(|(_, r)| r.clone())
            .collect();
        found.sort_by_key(|r| std::cmp::Reverse(r.id));
        found.truncate(query.limit as usize);
        Ok(found)
    }

    async fn delivery(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
    ) -> DomainResult<Option<DeliveryDetail>> {
        let t = self.tables();
        Ok(t.deliveries
            .iter()
            .find(|(sub, r)| sub == id && r.id == delivery)
            .map(|(_, r)| DeliveryDetail {
                record: r.clone(),
                payload: t
                    .events
                    .iter()
                    .find(|e| e.id == r.event_id)
                    .map(|e| e.body.clone())
                    .unwrap_or_default(),
                attempts: Vec::new(),
            }))
    }

    async fn queue_test(&self, id: &WebhookId, event: &Event) -> DomainResult<DeliveryRecord> {
        let mut t = self.tables();
        let subscription = t
            .live_subscription(id)
            .ok_or(DomainError::NotFound("webhook"))?;
        if !t.key_live(subscription.api_key_id) {
            return Err(DomainError::Conflict("API key revoked".into()));
        }
        t.events.push(event.clone());
        Ok(t.queue(id, event, DeliveryKind::Test, event.created_at))
    }

    async fn resend(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
        at: OffsetDateTime,
    ) -> DomainResult<DeliveryRecord> {
        let mut t = self.tables();
        let subscription = t
            .live_subscription(id)
            .ok_or(DomainError::NotFound("webhook"))?;
        let active = subscription.status == SubscriptionStatus::Active;
        let event = t
            .deliveries
            .iter()
            .find(|(sub, r)| sub == id && r.id == delivery)
            .and_then(|(_, r)| t.events.iter().find(|e| e.id == r.event_id))
            .cloned()
            .ok_or(DomainError::NotFound("delivery"))?;
        if !active {
            return Err(DomainError::Conflict("Webhook is disabled".into()));
        }
        Ok(t.queue(id, &event, DeliveryKind::Resend, at))
    }

    async fn requeued_since(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        since: OffsetDateTime,
    ) -> DomainResult<Vec<OffsetDateTime>> {
        let t = self.tables();
        let mine = |id: &WebhookId| {
            t.subscriptions
                .iter()
                .any(|s| &s.id == id && s.workspace_id == workspace && s.user_id == user)
        };
        let mut created: Vec<OffsetDateTime> = t
            .deliveries
            .iter()
            .filter(|(sub, r)| r.kind != DeliveryKind::Event && r.created_at >= since && mine(sub))
            .map(|(_, r)| r.created_at)
            .collect();
        created.sort();
        Ok(created)
    }

    async fn replay(&self, id: &WebhookId, window: &ReplayWindow) -> DomainResult<ReplayOutcome> {
        let mut t = self.tables();
        let subscription = t
            .live_subscription(id)
            .cloned()
            .ok_or(DomainError::NotFound("webhook"))?;
        if subscription.status != SubscriptionStatus::Active {
            return Err(DomainError::Conflict("Webhook is disabled".into()));
        }
        let received = |t: &Tables, event: &Event| {
            t.deliveries.iter().any(|(sub, r)| {
                sub == id
                    && r.event_id == event.id
                    && matches!(
                        r.status,
                        DeliveryStatus::Delivered | DeliveryStatus::Pending
                    )
            })
        };
        let mut candidates: Vec<Event> = t
            .events
            .iter()
            .filter(|e| {
                e.workspace_id == subscription.workspace_id
                    && e.created_at >= window.since
                    && e.created_at < window.until
                    && subscription.events.contains(&e.event_type)
                    && subscription.filters.matches(&e.subject)
                    && !(window.only_failed && e.created_at < subscription.created_at)
                    && !(window.only_failed && received(&t, e))
            })
            .cloned()
            .collect();
        candidates.sort_by_key(|e| (e.created_at, e.id));
        let times: Vec<OffsetDateTime> = candidates.iter().map(|e| e.created_at).collect();
        let (take, next_since) = window.cut(&times);
        candidates.truncate(take);
        for event in &candidates {
            t.queue(id, event, DeliveryKind::Replay, window.at);
        }
        Ok(ReplayOutcome {
            queued: candidates.len() as u64,
            truncated: next_since.is_some(),
            next_since,
        })
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

#[async_trait]
impl CatalogRepository for InMemoryStore {
    async fn create_project(&self, project: &Project, events: &[Event]) -> DomainResult<()> {
        let mut t = self.tables();
        t.check_client(project)?;
        t.projects.push(project.clone());
        t.record(events);
        Ok(())
    }

    async fn update_project(
        &self,
        before: &Project,
        after: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        t.check_client(after)?;
        let Some(stored) = t.projects.iter_mut().find(|p| {
            p.id == before.id
                && p.workspace_id == before.workspace_id
                && p.updated_at == before.updated_at
        }) else {
            return Ok(WriteOutcome::Raced);
        };
        *stored = after.clone();
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn delete_project(
        &self,
        project: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        if t.entries
            .iter()
            .any(|e| e.workspace_id == project.workspace_id && e.project_id == Some(project.id))
        {
            return Err(DomainError::Conflict(
                "Project is used by time entries".into(),
            ));
        }
        let before = t.projects.len();
        t.projects.retain(|p| {
            !(p.workspace_id == project.workspace_id
                && p.id == project.id
                && p.updated_at == project.updated_at)
        });
        if t.projects.len() == before {
            return Ok(WriteOutcome::Raced);
        }
        t.tasks.retain(|task| task.project_id != project.id);
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn project(
        &self,
        workspace: WorkspaceId,
        id: ProjectId,
    ) -> DomainResult<Option<Project>> {
        Ok(self
            .tables()
            .projects
            .iter()
            .find(|p| p.workspace_id == workspace && p.id == id)
            .cloned())
    }

    async fn projects(
        &self,
        workspace: WorkspaceId,
        page: PageRequest,
    ) -> DomainResult<Page<Project>> {
        let items = self
            .tables()
            .projects
            .iter()
            .filter(|p| p.workspace_id == workspace)
            .cloned()
            .collect();
        Ok(page_of(items, page, |p| Cursor {
            created_at: p.created_at,
            id: p.id.0,
        }))
    }

    async fn create_task(&self, task: &Task) -> DomainResult<()> {
        self.tables().tasks.push(task.clone());
        Ok(())
    }

    async fn task(&self, workspace: WorkspaceId, id: TaskId) -> DomainResult<Option<Task>> {
        Ok(self
            .tables()
            .tasks
            .iter()
            .find(|t| t.workspace_id == workspace && t.id == id)
            .cloned())
    }

    async fn tasks(
        &self,
        workspace: WorkspaceId,
        project: ProjectId,
        page: PageRequest,
    ) -> DomainResult<Page<Task>> {
        let items = self
            .tables()
            .tasks
            .iter()
            .filter(|t| t.workspace_id == workspace && t.project_id == project)
            .cloned()
            .collect();
        Ok(page_of(items, page, |t| Cursor {
            created_at: t.created_at,
            id: t.id.0,
        }))
    }

    async fn create_tag(&self, tag: &Tag) -> DomainResult<()> {
        let mut t = self.tables();
        let key = tag.name.to_lowercase();
        if let Some(existing) = t
            .tags
            .iter()
            .find(|x| x.workspace_id == tag.workspace_id && x.name.to_lowercase() == key)
        {
            return Err(DomainError::AlreadyExists {
                what: "tag",
                id: existing.id.to_string(),
            });
        }
        t.tags.push(tag.clone());
        Ok(())
    }

    async fn tags(&self, workspace: WorkspaceId, page: PageRequest) -> DomainResult<Page<Tag>> {
        let items = self
            .tables()
            .tags
            .iter()
            .filter(|t| t.workspace_id == workspace)
            .cloned()
            .collect();
        Ok(page_of(items, page, |t| Cursor {
            created_at: t.created_at,
            id: t.id.0,
        }))
    }

    async fn tags_by_id(&self, workspace: WorkspaceId, ids: &[TagId]) -> DomainResult<Vec<Tag>> {
        let t = self.tables();
        Ok(ids
            .iter()
            .filter_map(|id| {
                t.tags
                    .iter()
                    .find(|x| x.workspace_id == workspace && x.id == *id)
            })
            .cloned()
            .collect())
    }
}

/// `entry` as the database keeps it: its tags come back in id order, whatever order they were
/// written in.
fn as_stored(entry: &TimeEntry) -> TimeEntry {
    let mut stored = entry.clone();
    stored.tag_ids.sort_unstable();
    stored
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

    /// Refuses what the database's composite foreign keys refuse in an entry, in the order it
    /// checks them: its user must be a member of its workspace (an unexpected failure: no caller
    /// gets there), its project and task the workspace's (the task of that project), its tags
    /// the workspace's and each named once.
    fn check_references(&self, entry: &TimeEntry) -> DomainResult<()> {
        let ws = entry.workspace_id;
        if !self.memberships.contains(&(ws, entry.user_id)) {
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

#[async_trait]
impl TimeEntryRepository for InMemoryStore {
    async fn running(&self, user: UserId) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .find(|e| e.user_id == user && e.end.is_none())
            .cloned())
    }

    async fn start(
        &self,
        stop: Option<&TimerStop>,
        entry: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        // As the database's transaction: the stop (of whichever running entry it names), then the
        // insert, which loses to any other running timer of the user; all of it or nothing.
        if stop.is_some_and(|stop| {
            !t.entries
                .iter()
                .any(|e| e.id == stop.entry && e.end.is_none())
        }) {
            return Ok(WriteOutcome::Raced);
        }
        let other_running = entry.end.is_none()
            && t.entries.iter().any(|e| {
                e.user_id == entry.user_id
                    && e.end.is_none()
                    && stop.is_none_or(|stop| e.id != stop.entry)
            });
        if other_running {
            return Ok(WriteOutcome::Raced);
        }
        t.check_references(entry)?;
        if let Some(stop) = stop {
            t.apply_stop(stop);
        }
        t.entries.push(as_stored(entry));
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn stop(&self, stop: &TimerStop) -> DomainResult<WriteOutcome> {
        Ok(if self.tables().apply_stop(stop) {
            WriteOutcome::Applied
        } else {
            WriteOutcome::Raced
        })
    }

    async fn create(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<()> {
        let mut t = self.tables();
        t.check_references(entry)?;
        t.entries.push(as_stored(entry));
        t.record(events);
        Ok(())
    }

    async fn get(
        &self,
        workspace: WorkspaceId,
        id: TimeEntryId,
    ) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .find(|e| e.workspace_id == workspace && e.id == id)
            .cloned())
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: EntryFilter,
        page: PageRequest,
    ) -> DomainResult<Page<TimeEntry>> {
        let items = self
            .tables()
            .entries
            .iter()
            .filter(|e| e.workspace_id == workspace)
            .filter(|e| filter.from.is_none_or(|from| e.start >= from))
            .filter(|e| filter.to.is_none_or(|to| e.start < to))
            .filter(|e| filter.user.is_none_or(|u| e.user_id == u))
            .cloned()
            .collect();
        Ok(page_of(items, page, |e| Cursor {
            created_at: e.start,
            id: e.id.0,
        }))
    }

    async fn update(
        &self,
        before: &TimeEntry,
        after: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        let Some(position) = t.entries.iter().position(|e| {
            e.id == before.id
                && e.workspace_id == before.workspace_id
                && e.updated_at == before.updated_at
        }) else {
            return Ok(WriteOutcome::Raced);
        };
        t.check_references(after)?;
        t.entries[position] = as_stored(after);
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn delete(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        let before = t.entries.len();
        t.entries.retain(|e| {
            !(e.workspace_id == entry.workspace_id
                && e.id == entry.id
                && e.updated_at == entry.updated_at)
        });
        if t.entries.len() == before {
            return Ok(WriteOutcome::Raced);
        }
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn latest_manual(
        &self,
        workspace: WorkspaceId,
        user: UserId,
    ) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .filter(|e| {
                e.workspace_id == workspace && e.user_id == user && e.source == EntrySource::Manual
            })
            .max_by_key(|e| (e.created_at, e.id))
            .cloned())
    }

    async fn latest_stopped(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .filter(|e| {
                e.workspace_id == workspace && e.source == EntrySource::Timer && e.end.is_some()
            })
            .max_by_key(|e| (e.end, e.id))
            .cloned())
    }

    async fn latest_started(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .filter(|e| e.workspace_id == workspace && e.source == EntrySource::Timer)
            .max_by_key(|e| (e.start, e.id))
            .cloned())
    }
}

/// A resolver answering from a fixed table; names not in it fail to resolve.
#[derive(Debug, Default)]
pub struct StaticResolver(Mutex<HashMap<String, Vec<std::net::IpAddr>>>);

impl StaticResolver {
    /// Makes `host` resolve to `addresses`.
    pub fn set(&self, host: &str, addresses: &[&str]) {
        let parsed = addresses
            .iter()
            .map(|a| a.parse().expect("an IP address"))
            .collect();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(host.to_owned(), parsed);
    }
}

#[async_trait]
impl HostResolver for StaticResolver {
    async fn resolve(&self, host: &str, _port: u16) -> Result<Vec<std::net::IpAddr>, String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(host)
            .cloned()
            .ok_or_else(|| format!("{host}: no such host"))
    }
}

/// A complete in-memory world: fakes of every port and the services built on them.
#[derive(Debug)]
pub struct TestWorld {
    /// The store behind every repository port.
    pub store: Arc<InMemoryStore>,
    /// The clock, at 2026-01-05T09:00:00Z until advanced.
    pub clock: Arc<ManualClock>,
    /// The id generator.
    pub ids: Arc<SequentialIds>,
    /// The admin service on these fakes.
    pub admin: AdminService,
    /// The client service on these fakes.
    pub clients: ClientService,
    /// The resolver behind the webhook service.
    pub resolver: Arc<StaticResolver>,
    /// The webhook service on these fakes (SSRF guard on, cap 100).
    pub webhooks: WebhookService,
    /// The project, task and tag service on these fakes.
    pub catalog: CatalogService,
    /// The time-entry service on these fakes.
    pub entries: TimeEntryService,
}

impl Default for TestWorld {
    fn default() -> Self {
        Self::new()
    }
}

impl TestWorld {
    /// A fresh, empty world.
    pub fn new() -> Self {
        let store = Arc::new(InMemoryStore::default());
        let clock = Arc::new(ManualClock::at(
            time::macros::datetime!(2026-01-05 09:00 UTC),
        ));
        let ids = Arc::new(SequentialIds::default());
        let admin = AdminService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
            Arc::new(SeededRandom::new(42)),
        );
        let clients = ClientService::new(store.clone(), store.clone(), clock.clone(), ids.clone());
        let resolver = Arc::new(StaticResolver::default());
        let webhooks = WebhookService::new(
            store.clone(),
            store.clone(),
            resolver.clone(),
            clock.clone(),
            ids.clone(),
            Arc::new(SeededRandom::new(77)),
            WebhookSettings::default(),
            Masks::new(&[5; 32]),
        );
        let catalog = CatalogService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
        );
        let entries = TimeEntryService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
        );
        Self {
            store,
            clock,
            ids,
            admin,
            clients,
            resolver,
            webhooks,
            catalog,
            entries,
        }
    }

    /// A workspace `Acme` with one member, `Ada`.
    pub fn workspace_with_user(&self) -> (Workspace, User) {
        let ws = run_ready(
            self.admin
                .create_workspace(NewWorkspace::named(name("Acme"))),
        )
        .expect("create workspace");
        let user = run_ready(
            self.admin
                .create_user(ws.id, name("Ada"), email("ada@example.com")),
        )
        .expect("create user");
        (ws, user)
    }
}

/// `value` parsed as a [`Name`]; panics if it is not one (a test's own literal).
pub fn name(value: &str) -> Name {
    Name::parse("name", value).expect("a valid name")
}

/// `value` parsed as an [`Email`]; panics if it is not one (a test's own literal).
pub fn email(value: &str) -> Email {
    Email::parse(value).expect("a valid e-mail address")
}

/// Runs a future built on the in-memory fakes to completion.
///
/// The fakes never wait on anything, so such a future is ready on its first polls; a future that
/// waits on real I/O must not be given to this function.
pub fn run_ready<F: Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}
