//! Storage of webhook subscriptions.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;
use crate::ids::{UserId, WorkspaceId};
use crate::webhooks::model::{
    AttemptSummary, AuditEntry, HourlyStats, Subscription, SubscriptionChange, WebhookId,
};

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

    /// Pauses an `ACTIVE` subscription: it becomes `DISABLED` with reason `manual`, its pending
    /// deliveries are cancelled (never sent) and `audit` is written, with `updated_at` =
    /// `audit.at`, in one transaction. A `DISABLED` one is left as it is, its reason kept (no
    /// audit row). MUST return `NotFound("webhook")`, changing nothing, for no subscription or a
    /// deleted one.
    async fn disable(&self, id: &WebhookId, audit: &AuditEntry) -> DomainResult<()>;

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
        filters: &crate::webhooks::model::SubscriptionFilters,
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
