//! The delivery log, and the deliveries queued again on request.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;
use crate::ids::{EventId, UserId, WorkspaceId};
use crate::webhooks::model::{
    DeliveryDetail, DeliveryId, DeliveryQuery, DeliveryRecord, Event, EventType, ReplayOutcome,
    ReplayWindow, WebhookId,
};

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

    /// The type of event `event`, and its deliveries to `user`'s subscriptions that are not
    /// deleted, newest first, at most `limit`, each with its subscription's id; `None` if
    /// `workspace` has no such event or it does not show to `user` (a notice about another
    /// member's webhook).
    async fn event_deliveries(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        event: EventId,
        limit: u32,
    ) -> DomainResult<Option<(EventType, Vec<(WebhookId, DeliveryRecord)>)>>;

    /// The subscription's delivery `delivery` with its body and attempts, or `None` if it has
    /// none with this id.
    async fn delivery(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
    ) -> DomainResult<Option<DeliveryDetail>>;

    /// Stores `event` (a `WEBHOOK_TEST`) and one pending test delivery of it to the
    /// subscription, due at once, in one transaction; returns the delivery. With `sent_as`, the
    /// delivery is sent, listed and filtered as that type (`X-Webhook-Event`), while the event
    /// stays a test everywhere else. MUST return `NotFound("webhook")` for no subscription or a
    /// deleted one and `Conflict("API key revoked")` if its key is revoked, storing nothing.
    async fn queue_test(
        &self,
        id: &WebhookId,
        event: &Event,
        sent_as: Option<EventType>,
    ) -> DomainResult<DeliveryRecord>;

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
