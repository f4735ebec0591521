//! Keyset pagination over newest-first lists: `?limit=` and an opaque `?cursor=`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::{DomainError, DomainResult};

/// Page size when none is asked for.
pub const DEFAULT_PAGE_SIZE: u32 = 50;
/// Largest page size.
pub const MAX_PAGE_SIZE: u32 = 200;

/// A position in a list ordered by (`created_at` descending, `id` descending): the last item seen.
///
/// Encoded as URL-safe base64 of `<unix microseconds>:<uuid>`. A cursor only names a position, so a
/// forged one can never reach rows outside the caller's workspace; one that does not decode is a
/// validation error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// `created_at` of the last item seen.
    pub created_at: OffsetDateTime,
    /// `id` of the last item seen.
    pub id: Uuid,
}

impl Cursor {
    /// The opaque text form.
    pub fn encode(&self) -> String {
        let micros = self.created_at.unix_timestamp_nanos() / 1_000;
        URL_SAFE_NO_PAD.encode(format!("{micros}:{}", self.id))
    }

    /// Parses the text form; anything else is `Validation("invalid cursor")`.
    pub fn decode(text: &str) -> DomainResult<Self> {
        let invalid = || DomainError::validation("invalid cursor");
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let (micros, id) = text.split_once(':').ok_or_else(invalid)?;
        let micros: i128 = micros.parse().map_err(|_| invalid())?;
        // A position outside the accepted times names no row, and could not be bound to a query.
        let created_at = micros
            .checked_mul(1_000)
            .and_then(|nanos| OffsetDateTime::from_unix_timestamp_nanos(nanos).ok())
            .and_then(crate::timefmt::within_range)
            .ok_or_else(invalid)?;
        let id = Uuid::parse_str(id).map_err(|_| invalid())?;
        Ok(Self { created_at, id })
    }
}

/// Which page to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// Items per page, 1 to 200.
    pub limit: u32,
    /// Continue after this position; the first page when `None`.
    pub after: Option<Cursor>,
}

impl PageRequest {
    /// Validates a requested size and cursor (defaults: 50, first page).
    pub fn new(limit: Option<u32>, cursor: Option<&str>) -> DomainResult<Self> {
        let limit = limit.unwrap_or(DEFAULT_PAGE_SIZE);
        if !(1..=MAX_PAGE_SIZE).contains(&limit) {
            return Err(DomainError::validation(format!(
                "limit must be between 1 and {MAX_PAGE_SIZE}"
            )));
        }
        let after = cursor
            .filter(|c| !c.is_empty())
            .map(Cursor::decode)
            .transpose()?;
        Ok(Self { limit, after })
    }
}

/// One page of a list, and where the next one starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items, newest first.
    pub items: Vec<T>,
    /// The cursor of the next page, `None` on the last page.
    pub next: Option<Cursor>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` items read: the extra one only says another page exists.
    pub fn from_overfetch(mut items: Vec<T>, limit: u32, position: impl Fn(&T) -> Cursor) -> Self {
        let limit = limit as usize;
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(&position)
        } else {
            None
        };
        Self { items, next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn cursors_round_trip_to_the_microsecond() {
        let cursor = Cursor {
            created_at: datetime!(2026-01-05 09:00:00.123456 UTC),
            id: Uuid::from_u128(7),
        };
        assert_eq!(Cursor::decode(&cursor.encode()).unwrap(), cursor);
    }

    #[test]
    fn forged_cursors_are_validation_errors() {
        for text in [
            "x",
            "!!!",
            &URL_SAFE_NO_PAD.encode("12:nope"),
            &URL_SAFE_NO_PAD.encode("a:b"),
            // Well-formed, but outside the calendar or the accepted times.
            &URL_SAFE_NO_PAD.encode(format!("{}:{}", i128::MAX, Uuid::nil())),
            &URL_SAFE_NO_PAD.encode(format!("{}:{}", i64::MIN, Uuid::nil())),
            &URL_SAFE_NO_PAD.encode(format!("-377705116800000000:{}", Uuid::nil())),
            &URL_SAFE_NO_PAD.encode(format!("253402300800000000:{}", Uuid::nil())),
            &URL_SAFE_NO_PAD.encode(format!("-62135596800000000:{}", Uuid::nil())),
        ] {
            assert!(
                matches!(Cursor::decode(text), Err(DomainError::Validation(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn limits_are_bounded() {
        assert_eq!(PageRequest::new(None, None).unwrap().limit, 50);
        assert!(PageRequest::new(Some(0), None).is_err());
        assert!(PageRequest::new(Some(201), None).is_err());
        assert_eq!(PageRequest::new(Some(200), Some("")).unwrap().after, None);
    }

    #[test]
    fn overfetch_sets_the_next_cursor_only_when_more_exist() {
        let at = datetime!(2026-01-05 09:00 UTC);
        let pos = |n: &u128| Cursor {
            created_at: at,
            id: Uuid::from_u128(*n),
        };
        let page = Page::from_overfetch(vec![3, 2, 1], 2, pos);
        assert_eq!(page.items, vec![3, 2]);
        assert_eq!(page.next, Some(pos(&2)));
        let page = Page::from_overfetch(vec![3, 2], 2, pos);
        assert_eq!(page.next, None);
    }
}
