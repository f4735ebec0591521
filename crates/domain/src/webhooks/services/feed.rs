//! The catch-up feed (`events.md` section 5): what a poller reads instead of, or besides, its
//! webhooks, and what a subscriber reads after an outage to prove it has every event.

use std::sync::Arc;

use time::Duration;

use crate::accounts::model::Principal;
use crate::error::{DomainError, DomainResult};
use crate::masked::Masks;
use crate::system::Clock;
use crate::webhooks::model::{EventType, FeedCursor, FeedPage, FeedPosition};
use crate::webhooks::ports::EventFeed;

/// The most events a page holds.
pub const MAX_FEED_LIMIT: u32 = 1000;
/// The events a page holds when the caller does not say.
pub const DEFAULT_FEED_LIMIT: u32 = 100;
/// The refusal of a cursor from before the retained events.
pub const CURSOR_TOO_OLD: &str = "cursor is older than the retained events";

/// The `before` of a backward read that starts at the newest event.
pub const LATEST: &str = "latest";

/// Reads of the caller's workspace's events.
#[derive(Clone)]
pub struct FeedService {
    feed: Arc<dyn EventFeed>,
    clock: Arc<dyn Clock>,
    retention: Duration,
    masks: Masks,
}

impl std::fmt::Debug for FeedService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedService")
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl FeedService {
    /// The service on its port; events are kept for `retention`; cursors show positions
    /// through the installation's `masks`.
    pub fn new(
        feed: Arc<dyn EventFeed>,
        clock: Arc<dyn Clock>,
        retention: Duration,
        masks: Masks,
    ) -> Self {
        Self {
            feed,
            clock,
            retention,
            masks,
        }
    }

    /// How long events are kept.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// The page after `after` (a cursor of an earlier page; `None`: from the oldest retained
    /// event) of the caller's workspace's events of `types` (empty: every type the feed shows),
    /// at most `limit` (1 to [`MAX_FEED_LIMIT`]).
    ///
    /// The next cursor is the last event's position on a full page; on a page that reached the
    /// end it is the feed's horizon (or the last event, if later), so a poller of a quiet
    /// workspace keeps a fresh cursor. A cursor belongs to its `types`: read with other types,
    /// it may have passed events of those.
    pub async fn page(
        &self,
        caller: &Principal,
        after: Option<&str>,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<FeedPage> {
        let types = Self::checked(caller, types, limit)?;
        let now = self.clock.now();
        let after = match after {
            Some(text) => {
                let cursor = FeedCursor::decode(text, &self.masks)?;
                if cursor.at < now - self.retention {
                    return Err(DomainError::validation(CURSOR_TOO_OLD));
                }
                cursor.position
            }
            None => FeedPosition::default(),
        };
        let read = self
            .feed
            .read(caller.workspace_id, caller.user_id, after, &types, limit)
            .await?;
        let full = read.events.len() >= limit as usize;
        let next = match read.events.last() {
            Some(last) if full => FeedCursor {
                position: last.position,
                at: last.created_at,
            },
            last => FeedCursor {
                position: last
                    .map_or(after, |e| e.position)
                    .max(after)
                    .max(read.horizon),
                at: now,
            },
        };
        Ok(FeedPage {
            events: read.events,
            next_cursor: next.encode(&self.masks),
        })
    }

    /// A page read backwards, for people looking rather than pollers: up to `limit` of the
    /// caller's workspace's events of `types` that sort before `before` (a cursor of an earlier
    /// backward page, or `latest` for the newest), newest first, among those the forward feed
    /// shows. `next` goes on further back; once a page is short, it answers an empty page. The
    /// retention is not checked: what is gone is simply not there.
    pub async fn page_back(
        &self,
        caller: &Principal,
        before: &str,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<FeedPage> {
        let types = Self::checked(caller, types, limit)?;
        let before = if before == LATEST {
            FeedCursor {
                position: FeedPosition {
                    txid: i64::MAX,
                    seq: i64::MAX,
                },
                at: self.clock.now(),
            }
        } else {
            FeedCursor::decode(before, &self.masks)?
        };
        let events = self
            .feed
            .read_back(
                caller.workspace_id,
                caller.user_id,
                before.position,
                &types,
                limit,
            )
            .await?;
        let next = match events.last() {
            Some(oldest) => FeedCursor {
                position: oldest.position,
                at: oldest.created_at,
            },
            None => before,
        };
        Ok(FeedPage {
            events,
            next_cursor: next.encode(&self.masks),
        })
    }

    /// `types` and `limit` checked: `limit` within 1 to [`MAX_FEED_LIMIT`], no type the feed
    /// never shows; no types means every shown type.
    ///
    /// Invoice events are for owners and admins: a member naming one is refused (403), and a
    /// member's feed of every type leaves them out.
    fn checked(
        caller: &Principal,
        types: &[EventType],
        limit: u32,
    ) -> DomainResult<Vec<EventType>> {
        let admin = caller.role.administers();
        if !admin && types.iter().any(|t| t.is_invoice()) {
            return Err(DomainError::Forbidden);
        }
        if !(1..=MAX_FEED_LIMIT).contains(&limit) {
            return Err(DomainError::validation(format!(
                "limit must be between 1 and {MAX_FEED_LIMIT}"
            )));
        }
        if let Some(test) = types.iter().find(|t| !Self::shown(**t)) {
            return Err(DomainError::validation(format!(
                "Invalid event type: {}",
                test.as_str()
            )));
        }
        Ok(if types.is_empty() {
            EventType::ALL
                .into_iter()
                .filter(|t| Self::shown(*t) && (admin || !t.is_invoice()))
                .collect()
        } else {
            types.to_vec()
        })
    }

    /// Whether the feed shows events of `event_type`: every type but `WEBHOOK_TEST`, which is
    /// one webhook's check and not a workspace event.
    pub fn shown(event_type: EventType) -> bool {
        event_type != EventType::WebhookTest
    }
}
