//! Ports: the traits through which the domain reaches storage, time and randomness.
//!
//! Each method's documentation states its contract, errors included. Implementations live in
//! `timetrack-adapters` (PostgreSQL, system clock, OS randomness) and, for tests, in
//! the `testing` module (feature `testing`).

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;
use crate::ids::{ApiKeyId, ClientId, ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId};
pub use system::{Clock, IdGenerator, RandomSource};

pub mod system;

use crate::model::{
    ApiKey, AttemptSummary, AuditEntry, Client, DeliveryDetail, DeliveryId, DeliveryQuery,
    DeliveryRecord, Event, EventType, FeedEvent, FeedPosition, FeedRead, HourlyStats, KeyHash,
    Page, PageRequest, Project, ReplayOutcome, ReplayWindow, Subscription, SubscriptionChange, Tag,
    Task, TimeEntry, User, WebhookId, Workspace,
};

/// Storage of workspaces.
#[async_trait]
pub trait WorkspaceRepository: Send + Sync {
    /// Stores a new workspace. MUST return `Conflict` if its id exists.
    async fn create(&self, workspace: &Workspace) -> DomainResult<()>;

    /// The workspace with this id, or `None`.
    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>>;
}

/// Storage of users and their workspace memberships.
#[async_trait]
pub trait UserRepository: Send + Sync {
    /// Stores a new user and makes them a member of `workspace`, in one transaction.
    ///
    /// MUST return `NotFound("workspace")` if the workspace does not exist and `Conflict` if a user
    /// with the same e-mail (case-insensitively) exists; nothing is stored then.
    async fn create_member(
        &self,
        user: &User,
        workspace: WorkspaceId,
        at: OffsetDateTime,
    ) -> DomainResult<()>;

    /// Makes an existing user a member of `workspace`.
    ///
    /// MUST return `NotFound("workspace")` if the workspace does not exist and `Conflict` if the
    /// user already is a member.
    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        at: OffsetDateTime,
    ) -> DomainResult<()>;

    /// The user with this e-mail (compared case-insensitively), or `None`.
    async fn find_by_email(&self, email: &str) -> DomainResult<Option<User>>;

    /// The user with this id, or `None`.
    async fn get(&self, id: UserId) -> DomainResult<Option<User>>;
}

/// Storage of API keys, by hash.
#[async_trait]
pub trait ApiKeyRepository: Send + Sync {
    /// Stores a new key with the hash of its secret.
    ///
    /// MUST return `NotFound("membership")` if the user is not a member of the key's workspace.
    async fn create(&self, key: &ApiKey, hash: &KeyHash) -> DomainResult<()>;

    /// The key with this hash if it exists and is not revoked, or `None`.
    async fn find_active_by_hash(&self, hash: &KeyHash) -> DomainResult<Option<ApiKey>>;

    /// The hashes of every key that is not revoked: past an address's failure limit, a key that
    /// is not among them is refused without a look-up of its own.
    async fn active_hashes(&self) -> DomainResult<Vec<KeyHash>>;

    /// Records that the key authenticated a request at `at`.
    async fn record_use(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<()>;

    /// Revokes the key and disables every active webhook subscription created with it, in one
    /// transaction, and returns the key as now stored.
    ///
    /// Revoking a revoked key changes nothing and returns it. MUST return `NotFound("api key")` if
    /// no key has this id.
    async fn revoke(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<ApiKey>;
}

/// Reachability of the database, for the health check.
#[async_trait]
pub trait HealthProbe: Send + Sync {
    /// Runs a trivial query. MUST return within its own time bound (2 s in production) with
    /// `Unavailable` if the database cannot answer.
    async fn check_database(&self) -> DomainResult<()>;
}

/// Storage of clients. Writes that cause events take them and store them in the same transaction
/// (the transactional outbox), together with one pending delivery per active subscription of the
/// workspace that lists the event's type.
#[async_trait]
pub trait ClientRepository: Send + Sync {
    /// Stores a new client and `events`, atomically.
    ///
    /// MUST return `AlreadyExists { what: "client", id }` with the existing client's id when a
    /// client of the workspace has the same name case-insensitively; nothing is stored then.
    async fn create(&self, client: &Client, events: &[Event]) -> DomainResult<()>;

    /// The workspace's client with this id, or `None` (also for another workspace's client).
    async fn get(&self, workspace: WorkspaceId, id: ClientId) -> DomainResult<Option<Client>>;

    /// A page of the workspace's clients, newest first (`created_at`, then `id`, descending).
    async fn list(&self, workspace: WorkspaceId, page: PageRequest) -> DomainResult<Page<Client>>;

    /// Up to `limit` of the workspace's clients whose lowercased name contains `needle` (already
    /// lowercase; every character literal, `%` and `_` included), newest first.
    async fn search(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Client>>;

    /// The workspace's newest client, or `None`.
    async fn newest(&self, workspace: WorkspaceId) -> DomainResult<Option<Client>>;

    /// Replaces the stored client `before` with `after` (same id and workspace) and stores
    /// `events`, atomically, if the stored client is still `before` (same `updated_at`);
    /// otherwise writes nothing and returns `Raced`.
    ///
    /// MUST return `AlreadyExists` as `create` does.
    async fn update(
        &self,
        before: &Client,
        after: &Client,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Deletes `client` and stores `events`, atomically, if the stored client is still `client`
    /// (same `updated_at`); otherwise deletes nothing and returns `Raced`.
    ///
    /// MUST return `Conflict("Client is used by projects")` while a project refers to it.
    async fn delete(&self, client: &Client, events: &[Event]) -> DomainResult<WriteOutcome>;
}

/// Storage of webhook subscriptions.
#[async_trait]
pub trait SubscriptionRepository: Send + Sync {
    /// Stores a new subscription, unless its workspace already has `max_active` active ones.
    ///
    /// The count and the insert are atomic (concurrent subscribes cannot exceed the cap). MUST
    /// return `Conflict("Subscription limit reached")` at the cap; nothing is stored then.
    ///
    /// The subscription's API key is checked in the same write: MUST return `Unauthorized`, and
    /// store nothing, if the key is revoked, even if it was revoked an instant before (whatever a
    /// cache of verified keys says); a revocation that commits after the insert disables it.
    async fn create(&self, subscription: &Subscription, max_active: u32) -> DomainResult<()>;

    /// The subscription with this id, whatever its status and workspace, or `None`.
    async fn get(&self, id: &WebhookId) -> DomainResult<Option<Subscription>>;

    /// `user`'s subscriptions in `workspace` that are not deleted, newest first.
    async fn list(&self, workspace: WorkspaceId, user: UserId) -> DomainResult<Vec<Subscription>>;

    /// Applies `change` to the subscription unless it is deleted — only the fields it sets, so
    /// concurrent changes of different fields both stand — and writes `audit`, in one
    /// transaction; returns the subscription as stored. MUST return `NotFound("webhook")`, and
    /// change nothing, if no such subscription exists (deleted meanwhile included).
    async fn update(
        &self,
        id: &WebhookId,
        change: &SubscriptionChange,
        audit: &AuditEntry,
    ) -> DomainResult<Subscription>;

    /// Makes a `DISABLED` subscription `ACTIVE` again, its failure streak cleared, with
    /// `updated_at` = `audit.at`, and writes `audit`, in one transaction; an `ACTIVE` one is left
    /// as it is (no audit row). MUST return, changing nothing: `NotFound("webhook")` for no
    /// subscription or a deleted one; `Conflict("API key revoked")` if its key is revoked;
    /// `Conflict("Subscription limit reached")` if its workspace already has `max_active`
    /// active ones (counted atomically with the change, as [`create`](Self::create) does).
    async fn enable(&self, id: &WebhookId, max_active: u32, audit: &AuditEntry)
    -> DomainResult<()>;

    /// The subscription's attempts in 24 hourly buckets (UTC), oldest first, the last one the
    /// hour of `now`; an hour without attempts has zero counts and no durations.
    async fn hourly_stats(
        &self,
        id: &WebhookId,
        now: OffsetDateTime,
    ) -> DomainResult<Vec<HourlyStats>>;

    /// What the subscription's attempts and deliveries say about it (see [`AttemptSummary`]):
    /// a success is an attempt answered with a 2xx; every other attempt is a failure.
    async fn attempt_summary(&self, id: &WebhookId) -> DomainResult<AttemptSummary>;

    /// Marks the subscription deleted, cancels its pending deliveries (they are never sent) and
    /// writes `audit`, in one transaction. A deleted subscription stays as it is (no new audit
    /// row). MUST return `NotFound("webhook")` if no subscription has this id.
    async fn delete(&self, id: &WebhookId, audit: &AuditEntry) -> DomainResult<()>;

    /// The first id of `filters`, in the order project, client, user, that is not a project, a
    /// client or a member of `workspace` (an unknown id or another workspace's), with its
    /// filter's name; `None` if there is none.
    async fn filter_id_outside(
        &self,
        workspace: WorkspaceId,
        filters: &crate::model::SubscriptionFilters,
    ) -> DomainResult<Option<(&'static str, uuid::Uuid)>>;

    /// Stores a new signing secret; the current one becomes the previous secret, signing
    /// beside it until `previous_expires_at` (the secret it replaced, if any, is dropped), and
    /// writes `audit`, in one transaction. MUST return `NotFound("webhook")`, changing nothing,
    /// if no subscription has this id or it is deleted.
    async fn rotate_secret(
        &self,
        id: &WebhookId,
        secret: &str,
        previous_expires_at: OffsetDateTime,
        audit: &AuditEntry,
    ) -> DomainResult<()>;
}

/// A subscription's deliveries: the log, and the deliveries its owner asks for (a test, a
/// resend, a replay).
#[async_trait]
pub trait DeliveryLog: Send + Sync {
    /// The subscription's deliveries that `query` selects, newest (highest id) first.
    async fn deliveries(
        &self,
        id: &WebhookId,
        query: &DeliveryQuery,
    ) -> DomainResult<Vec<DeliveryRecord>>;

    /// The subscription's delivery `delivery` with its body and attempts, or `None` if it has
    /// none with this id.
    async fn delivery(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
    ) -> DomainResult<Option<DeliveryDetail>>;

    /// Stores `event` (a `WEBHOOK_TEST`) and one pending test delivery of it to the
    /// subscription, due at once, in one transaction; returns the delivery. MUST return
    /// `NotFound("webhook")` for no subscription or a deleted one and `Conflict("API key
    /// revoked")` if its key is revoked, storing nothing.
    async fn queue_test(&self, id: &WebhookId, event: &Event) -> DomainResult<DeliveryRecord>;

    /// Queues a new delivery (`resend`) of the event of the subscription's delivery `delivery`,
    /// due at `at`, whatever that delivery's status; returns it. MUST return
    /// `NotFound("delivery")` if the subscription has no such delivery (its event purged
    /// included) and `Conflict("Webhook is disabled")` unless the subscription is active.
    async fn resend(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
        at: OffsetDateTime,
    ) -> DomainResult<DeliveryRecord>;

    /// Queues, oldest first, a `replay` delivery due at `window.at` of each event of the
    /// subscription's workspace recorded in `[since, until)` that the subscription would
    /// receive now (its event types); with `only_failed`, only those it has no delivery of that
    /// was delivered or is pending. At most `window.limit`; when more remain, `truncated` and
    /// `next_since`, the creation time of the first left out (the events of that instant are
    /// left out too when some are, so that a replay from there repeats none). MUST return `Conflict("Webhook is
    /// disabled")` unless the subscription is active, queueing nothing.
    async fn replay(&self, id: &WebhookId, window: &ReplayWindow) -> DomainResult<ReplayOutcome>;

    /// The deliveries other than an event's own (`replay`, `resend`, `test`) created at or after
    /// `since` for the subscriptions of `user` in `workspace`, oldest first: when each was
    /// created. What the quota on queueing again counts.
    async fn requeued_since(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        since: OffsetDateTime,
    ) -> DomainResult<Vec<OffsetDateTime>>;
}

/// Name resolution for the SSRF guard.
#[async_trait]
pub trait HostResolver: Send + Sync {
    /// The addresses of `host`, or a description of why it could not be resolved. MUST return
    /// within its own time bound.
    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<std::net::IpAddr>, String>;
}

/// Storage of projects, tasks and tags.
#[async_trait]
pub trait CatalogRepository: Send + Sync {
    /// Stores a project. Its client, if any, MUST be a client of the same workspace: otherwise
    /// `Validation("client_id does not name a client of this workspace")`.
    /// `events` are stored with it, atomically.
    async fn create_project(&self, project: &Project, events: &[Event]) -> DomainResult<()>;

    /// Replaces the stored project `before` with `after` and stores `events`, atomically, if the
    /// stored project is still `before` (same `updated_at`); otherwise `Raced`. A client of
    /// another workspace is the `Validation` of `create_project`.
    async fn update_project(
        &self,
        before: &Project,
        after: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Deletes `project` (and its tasks) and stores `events`, atomically, if the stored project
    /// is still `project`; otherwise `Raced`.
    ///
    /// MUST return `Conflict("Project is used by time entries")` while a time entry refers to it.
    async fn delete_project(
        &self,
        project: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// The workspace's project, or `None`.
    async fn project(&self, workspace: WorkspaceId, id: ProjectId)
    -> DomainResult<Option<Project>>;

    /// A page of the workspace's projects, newest first.
    async fn projects(
        &self,
        workspace: WorkspaceId,
        page: PageRequest,
    ) -> DomainResult<Page<Project>>;

    /// Stores a task of an existing project of the same workspace.
    async fn create_task(&self, task: &Task) -> DomainResult<()>;

    /// The workspace's task, or `None`.
    async fn task(&self, workspace: WorkspaceId, id: TaskId) -> DomainResult<Option<Task>>;

    /// A page of a project's tasks, newest first.
    async fn tasks(
        &self,
        workspace: WorkspaceId,
        project: ProjectId,
        page: PageRequest,
    ) -> DomainResult<Page<Task>>;

    /// Stores a tag. MUST return `AlreadyExists { what: "tag", id }` when the workspace has a tag
    /// of the same name case-insensitively.
    async fn create_tag(&self, tag: &Tag) -> DomainResult<()>;

    /// A page of the workspace's tags, newest first.
    async fn tags(&self, workspace: WorkspaceId, page: PageRequest) -> DomainResult<Page<Tag>>;

    /// The workspace's tags among `ids` (unknown or foreign ids are left out), in `ids` order.
    async fn tags_by_id(&self, workspace: WorkspaceId, ids: &[TagId]) -> DomainResult<Vec<Tag>>;
}

/// A timer to stop as part of another write: the entry, its end, and its `TIMER_STOPPED` event.
#[derive(Debug, Clone)]
pub struct TimerStop {
    /// The running entry.
    pub entry: TimeEntryId,
    /// Its end (whole seconds).
    pub end: OffsetDateTime,
    /// The event announcing the stop.
    pub event: Event,
}

/// Whether a conditional write applied, or lost a race with a concurrent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written, with its events.
    Applied,
    /// Nothing written: the row changed meanwhile (for a timer: stopped, or another one started;
    /// for an update or a delete: changed or deleted since it was read).
    Raced,
}

/// Which entries a list returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryFilter {
    /// Entries starting at or after this time.
    pub from: Option<OffsetDateTime>,
    /// Entries starting before this time.
    pub to: Option<OffsetDateTime>,
    /// Entries of this member only.
    pub user: Option<UserId>,
}

/// Storage of time entries. Writes that cause events store them in the same transaction.
#[async_trait]
pub trait TimeEntryRepository: Send + Sync {
    /// The user's running timer, in any workspace, or `None`.
    async fn running(&self, user: UserId) -> DomainResult<Option<TimeEntry>>;

    /// In one transaction: stops `stop` if given (only if it is still running) and inserts the new
    /// running `entry`, with `events`. `Raced` (and nothing written) when `stop`'s timer is no
    /// longer running or another timer of the user started meanwhile.
    async fn start(
        &self,
        stop: Option<&TimerStop>,
        entry: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Stops `stop` (only if still running) with its event; `Raced` if it was not running.
    async fn stop(&self, stop: &TimerStop) -> DomainResult<WriteOutcome>;

    /// Inserts a finished entry (manual) with `events`.
    async fn create(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<()>;

    /// The workspace's entry, or `None`.
    async fn get(&self, workspace: WorkspaceId, id: TimeEntryId)
    -> DomainResult<Option<TimeEntry>>;

    /// A page of the workspace's entries matching `filter`, latest start first (the cursor's time
    /// is the start).
    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: EntryFilter,
        page: PageRequest,
    ) -> DomainResult<Page<TimeEntry>>;

    /// Replaces the stored entry `before` with `after` (same id and workspace), tags included,
    /// and stores `events`, atomically, if the stored entry is still `before` (same
    /// `updated_at`); otherwise writes nothing and returns `Raced`.
    async fn update(
        &self,
        before: &TimeEntry,
        after: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Deletes `entry` and stores `events`, atomically, if the stored entry is still `entry`
    /// (same `updated_at`); otherwise deletes nothing and returns `Raced`.
    async fn delete(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<WriteOutcome>;

    /// The user's most recently created manual entry in the workspace.
    async fn latest_manual(
        &self,
        workspace: WorkspaceId,
        user: UserId,
    ) -> DomainResult<Option<TimeEntry>>;

    /// The workspace's most recently stopped timer entry (by end time).
    async fn latest_stopped(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>>;

    /// The workspace's most recently started timer entry (by start time), running or not.
    async fn latest_started(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>>;
}

/// Where rate-limit counts live: in the process, or shared by several instances.
#[async_trait]
pub trait RateLimitStore: Send + Sync {
    /// Decides on one request of `key` at `now` under `policy` (see
    /// [`crate::ratelimit::decide`]) and counts it if admitted, atomically for the key.
    async fn hit(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: crate::ratelimit::RatePolicy,
    ) -> DomainResult<crate::ratelimit::RateDecision>;

    /// Decides on one request of `key` at `now` under `policy` as [`RateLimitStore::hit`] would,
    /// and MUST NOT count it.
    async fn peek(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: crate::ratelimit::RatePolicy,
    ) -> DomainResult<crate::ratelimit::RateDecision>;
}

/// What [`IdempotencyStore::begin`] found for an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyBegin {
    /// First use: the request runs now, and its response is completed or abandoned after.
    Started,
    /// A finished earlier request with the same fingerprint: answer its response again.
    Replay {
        /// The stored status code.
        status: u16,
        /// The stored body.
        body: String,
    },
    /// The key was used with a different request.
    Mismatch,
    /// The first request with this key has not finished yet.
    InProgress,
}

/// Idempotency keys of POST requests, per API key, kept for 24 hours.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims `key` for a request with `fingerprint` (SHA-256 of method, path and body), or reports
    /// what an earlier use left. Uses older than 24 h at `now` are forgotten. Atomic per key.
    /// `workspace` is the key's (what it is kept with).
    async fn begin(
        &self,
        workspace: WorkspaceId,
        api_key: ApiKeyId,
        key: &str,
        fingerprint: [u8; 32],
        now: OffsetDateTime,
    ) -> DomainResult<IdempotencyBegin>;

    /// Stores the response of the request that [`begin`](Self::begin) started.
    async fn complete(
        &self,
        api_key: ApiKeyId,
        key: &str,
        status: u16,
        body: &str,
    ) -> DomainResult<()>;

    /// Forgets a started key whose request did not finish with a storable response, so a retry
    /// runs again.
    async fn abandon(&self, api_key: ApiKeyId, key: &str) -> DomainResult<()>;
}

/// Sends one webhook request over HTTPS.
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// Sends `request` once: resolves the host and refuses blocked addresses (unless private
    /// targets are allowed), connects only to a checked address, verifies TLS, follows no
    /// redirect, reads at most 16 KiB of the response, and gives up after its time-outs. Every
    /// result, failures included, is an [`crate::delivery::AttemptReport`]; this never errs.
    async fn send(
        &self,
        request: &crate::delivery::WebhookRequest,
    ) -> crate::delivery::AttemptReport;
}

/// The queue of pending deliveries, shared by every worker of every process.
#[async_trait]
pub trait DeliveryQueue: Send + Sync {
    /// Records an attempt, in one transaction: the attempt row, the delivery's new state
    /// (delivered, pending again at the retry time, or failed), the subscription's failure clock,
    /// and, for `Unsubscribe` (410) or `disable_subscription`, the subscription's end with its
    /// pending deliveries cancelled (and an audit row for a 410). A delivery that is no longer
    /// pending (cancelled meanwhile) keeps its state; the attempt row is still written. A test
    /// delivery's attempt leaves the failure clock alone.
    ///
    /// The attempt's notice, if any, is written in the same transaction: its event, and one
    /// pending delivery for each active subscription of the workspace listing its type except
    /// the one it is about. `WEBHOOK_FAILING` is written only if the owner was not told of the
    /// current streak yet (and marks it told); `WEBHOOK_RECOVERED` only if they were (and clears
    /// it); `WEBHOOK_DISABLED` only if the attempt did end the subscription. Returns whether
    /// the notice was written.
    async fn record(
        &self,
        claimed: &crate::delivery::ClaimedDelivery,
        attempt: &crate::delivery::AttemptRecord,
    ) -> DomainResult<bool>;

    /// Records `attempts`, none of which may be recorded alone
    /// ([`AttemptRecord::recorded_alone`](crate::delivery::AttemptRecord::recorded_alone) false:
    /// those go through [`record`](Self::record)), each as `record` would; then claims up
    /// to `limit` due deliveries of active subscriptions, and test deliveries of disabled ones
    /// (pending, next attempt at or before
    /// `now`, no live lease), leasing them until `lease_until`. Both in one transaction,
    /// committed before returning: the in-flight slots the recorded deliveries held are free for
    /// the claim, and a claimed delivery is invisible to other workers until its lease expires
    /// (a crashed worker's deliveries come back then). No subscription gets more than
    /// `caps.per_subscription` deliveries leased at once (counting those already in flight), so a
    /// slow subscriber cannot take every worker, and no workspace more than `caps.per_workspace`
    /// in the claiming process (counting `caps.held`), taken fairly between workspaces as
    /// [`InFlightCaps`](crate::delivery::InFlightCaps) says. On an error nothing is recorded and
    /// nothing claimed.
    /// Empty `attempts` is a plain claim; `limit` 0 records only. With
    /// [`ClaimWhen::IfHeldBack`](crate::delivery::ClaimWhen::IfHeldBack) the claim runs only
    /// when a subscription of `attempts` has due deliveries that no worker holds.
    async fn record_and_claim(
        &self,
        attempts: &[(
            crate::delivery::ClaimedDelivery,
            crate::delivery::AttemptRecord,
        )],
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        caps: &crate::delivery::InFlightCaps,
        when: crate::delivery::ClaimWhen,
    ) -> DomainResult<Vec<crate::delivery::ClaimedDelivery>>;

    /// How many pending deliveries there are as of `now`, and how long the oldest due one has
    /// waited, for monitoring.
    async fn stats(&self, now: OffsetDateTime) -> DomainResult<crate::delivery::QueueStats>;
}

/// What one housekeeping pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Purged {
    /// Events (with their deliveries and attempts) past retention.
    pub events: u64,
    /// Attempt rows past retention (of deliveries still kept).
    pub attempts: u64,
    /// Idempotency keys past 24 hours.
    pub idempotency_keys: u64,
    /// Rate-limit rows past their 60 s window.
    pub rate_limit_hits: u64,
}

/// The catch-up feed's reads.
#[async_trait]
pub trait EventFeed: Send + Sync {
    /// Up to `limit` of `workspace`'s events of `types` that sort after `after`, oldest first,
    /// among those whose transaction had ended when the read began (and every older
    /// transaction too: see [`crate::model::feed`]), with that horizon. A notice about a webhook
    /// (`WEBHOOK_FAILING`, ...) is shown only to `viewer` when `viewer` owns that webhook.
    async fn read(
        &self,
        workspace: WorkspaceId,
        viewer: UserId,
        after: FeedPosition,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<FeedRead>;

    /// Up to `limit` of `workspace`'s events of `types` that sort before `before`, newest first,
    /// among those [`read`](Self::read) would show now (below the same horizon, the same
    /// notices).
    async fn read_back(
        &self,
        workspace: WorkspaceId,
        viewer: UserId,
        before: FeedPosition,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<Vec<FeedEvent>>;
}

/// How long rows are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Events, with their deliveries (the catch-up feed's and a replay's reach); never less than
    /// `deliveries`.
    pub events: time::Duration,
    /// Delivery attempts (the delivery log's reach).
    pub deliveries: time::Duration,
}

/// Removal of rows that have outlived their use, so tables do not grow without bound.
#[async_trait]
pub trait Housekeeping: Send + Sync {
    /// Removes, as of `now`: events older than `retention.events` (or `retention.deliveries`, if
    /// longer) whose deliveries are all final (with those deliveries and their attempts), attempt
    /// rows older than `retention.deliveries`, idempotency keys older than 24 hours, and
    /// rate-limit rows older than 60 s. Works in bounded batches.
    async fn purge(&self, now: OffsetDateTime, retention: Retention) -> DomainResult<Purged>;
}
