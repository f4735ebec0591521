//! The catch-up feed's reads.

use async_trait::async_trait;

use crate::error::DomainResult;
use crate::ids::{UserId, WorkspaceId};
use crate::webhooks::model::{EventType, FeedEvent, FeedPosition, FeedRead};

/// The catch-up feed's reads.
#[async_trait]
pub trait EventFeed: Send + Sync {
    /// Up to `limit` of `workspace`'s events of `types` that sort after `after`, oldest first,
    /// among those whose transaction had ended when the read began (and every older
    /// transaction too: see [`crate::webhooks::model::feed`]), with that horizon. A notice about a webhook
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
