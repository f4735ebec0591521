//! The catch-up feed (`events.md` section 5): a workspace's events, oldest first, read by cursor.
//!
//! A position is the pair (transaction id, sequence) of an event's insert. The feed only shows
//! events whose transaction id is below the oldest transaction still running when it is read, so
//! every event a later page could show sorts after every event an earlier page showed: an event
//! whose transaction commits late is never skipped, only shown once its transaction (and every
//! older one) has ended.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;

use crate::error::{DomainError, DomainResult};
use crate::ids::EventId;
use crate::masked::Masks;
use crate::webhooks::model::EventType;

/// Where an event sorts in the feed: its transaction's id, then its insert sequence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FeedPosition {
    /// The id of the transaction that recorded the event.
    pub txid: i64,
    /// The event's insert sequence number.
    pub seq: i64,
}

/// A reader's place in the feed: a position, and the time up to which the reader has seen the
/// feed (for the retention check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedCursor {
    /// Everything at or before it has been shown.
    pub position: FeedPosition,
    /// When the reader's view was taken: the last event's time on a full page, the read's time
    /// on a page that reached the end.
    pub at: OffsetDateTime,
}

impl FeedCursor {
    /// URL-safe base64 of `p:<transaction>:<sequence>:<unix seconds>`, the position shown
    /// through the installation's [`Masks`] (a tenant cannot read the installation's transaction
    /// ids or event sequence from its cursors).
    pub fn encode(&self, masks: &Masks) -> String {
        // Every position is of non-negative numbers (a transaction id, an identity from 1, or
        // the default 0); a negative one could only come from a bug, and shows as 0.
        let (transaction, sequence) = masks
            .show_position(self.position.txid, self.position.seq)
            .unwrap_or_default();
        URL_SAFE_NO_PAD.encode(format!(
            "p:{transaction}:{sequence}:{}",
            self.at.unix_timestamp()
        ))
    }

    /// Parses [`encode`](Self::encode)'s form; anything else is `Validation("invalid cursor")`.
    pub fn decode(text: &str, masks: &Masks) -> DomainResult<Self> {
        let invalid = || DomainError::validation("invalid cursor");
        let raw = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
        let raw = String::from_utf8(raw).map_err(|_| invalid())?;
        let mut parts = raw.strip_prefix("p:").ok_or_else(invalid)?.split(':');
        let mut number = || -> DomainResult<i64> {
            let part = parts.next().ok_or_else(invalid)?;
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid());
            }
            part.parse().map_err(|_| invalid())
        };
        let (transaction, sequence, at) = (number()?, number()?, number()?);
        if parts.next().is_some() {
            return Err(invalid());
        }
        let (txid, seq) = masks
            .read_position(transaction, sequence)
            .ok_or_else(invalid)?;
        Ok(Self {
            position: FeedPosition { txid, seq },
            at: OffsetDateTime::from_unix_timestamp(at).map_err(|_| invalid())?,
        })
    }
}

/// An event as the feed shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEvent {
    /// The event id: the `webhook-id` of its deliveries.
    pub id: EventId,
    /// Its type.
    pub event_type: EventType,
    /// When it was recorded.
    pub created_at: OffsetDateTime,
    /// The delivered body, byte for byte.
    pub body: String,
    /// Where it sorts.
    pub position: FeedPosition,
}

/// What one read of the feed found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedRead {
    /// The events after the asked position, oldest first, at most the limit.
    pub events: Vec<FeedEvent>,
    /// Where the feed is complete: every event sorting before it that the read could show has
    /// been committed (the oldest running transaction's id, sequence 0).
    pub horizon: FeedPosition,
}

/// One page of the feed, with the cursor of the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedPage {
    /// The events, oldest first.
    pub events: Vec<FeedEvent>,
    /// Where the next read goes on, encoded ([`FeedCursor::encode`]); present on every page, an
    /// empty one too.
    pub next_cursor: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_nothing_else_decodes() {
        let masks = Masks::new(&[3; 32]);
        let cursor = FeedCursor {
            position: FeedPosition {
                txid: 7_000_123,
                seq: 42,
            },
            at: OffsetDateTime::from_unix_timestamp(1_790_000_000).unwrap(),
        };
        let text = cursor.encode(&masks);
        assert_eq!(FeedCursor::decode(&text, &masks).unwrap(), cursor);
        // The position is not shown as it is, and another installation reads it otherwise.
        let shown = String::from_utf8(URL_SAFE_NO_PAD.decode(&text).unwrap()).unwrap();
        assert!(
            !shown.contains("7000123") && !shown.contains(":42:"),
            "{shown}"
        );
        assert_ne!(
            FeedCursor::decode(&text, &Masks::new(&[4; 32])).unwrap(),
            cursor
        );
        for bad in [
            "",
            "!!",
            &URL_SAFE_NO_PAD.encode("p:1:2"),
            &URL_SAFE_NO_PAD.encode("p:1:2:3:4"),
            &URL_SAFE_NO_PAD.encode("p:-1:2:3"),
            &URL_SAFE_NO_PAD.encode("f:1:2:3"),
            &URL_SAFE_NO_PAD.encode("p:1:2:99999999999999999"),
            &URL_SAFE_NO_PAD.encode("p:99999999999999999999:2:3"),
        ] {
            assert!(FeedCursor::decode(bad, &masks).is_err(), "{bad}");
        }
    }

    #[test]
    fn positions_sort_by_transaction_then_sequence() {
        let p = |txid, seq| FeedPosition { txid, seq };
        assert!(p(5, 100) < p(6, 1));
        assert!(p(6, 1) < p(6, 2));
    }
}
