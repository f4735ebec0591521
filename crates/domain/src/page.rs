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

/// Longest `q` a list takes, in characters (a name is at most 255).
pub const MAX_QUERY_CHARS: usize = 255;

/// What a list is narrowed to, beside its page: `?q=` and `?updated_since=`
/// (docs/integration-guide.md, section 2a). The order and the cursor stay those of the whole list, so
/// a platform pages through a narrowed list exactly as through the whole one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// The lowercased text the name must contain (case-insensitive substring, as the published
    /// client search matches); `None` for every name.
    pub q: Option<String>,
    /// Only items created or changed at or after this instant (inclusive, so a platform that polls
    /// with the newest `updated_at` it saw misses nothing that shared that instant).
    pub updated_since: Option<OffsetDateTime>,
}

impl ListFilter {
    /// Validates `?q=` (1 to [`MAX_QUERY_CHARS`] characters once trimmed; an empty or blank one
    /// narrows nothing) and `?updated_since=` (RFC 3339).
    pub fn new(q: Option<&str>, updated_since: Option<&str>) -> DomainResult<Self> {
        let q = match q.map(str::trim).filter(|q| !q.is_empty()) {
            Some(q) if q.chars().count() > MAX_QUERY_CHARS => {
                return Err(DomainError::validation(format!(
                    "q must be at most {MAX_QUERY_CHARS} characters"
                )));
            }
            Some(q) if q.contains('\0') => {
                return Err(DomainError::validation("q must not contain NUL"));
            }
            q => q.map(str::to_lowercase),
        };
        let updated_since = updated_since
            .map(|at| crate::timefmt::parse_rfc3339("updated_since", at))
            .transpose()?;
        Ok(Self { q, updated_since })
    }

    /// Whether `name` and `updated_at` pass: the rule the stores apply in SQL, for stores that
    /// filter in memory and for tests.
    pub fn admits(&self, name: &str, updated_at: OffsetDateTime) -> bool {
        self.q
            .as_deref()
            .is_none_or(|q| name.to_lowercase().contains(q))
            && self.updated_since.is_none_or(|since| updated_at >= since)
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
    fn list_filters_validate_and_match_case_insensitively() {
        let none = ListFilter::new(Some("  "), None).unwrap();
        assert_eq!(none, ListFilter::default());
        let f = ListFilter::new(Some(" ÄcMe "), Some("2026-01-01T00:00:00+01:00")).unwrap();
        assert_eq!(f.q.as_deref(), Some("äcme"));
        assert_eq!(f.updated_since, Some(datetime!(2025-12-31 23:00:00 UTC)));
        assert!(f.admits("The ÄCME Corp", datetime!(2025-12-31 23:00:00 UTC)));
        assert!(!f.admits("The ÄCME Corp", datetime!(2025-12-31 22:59:59 UTC)));
        assert!(!f.admits("Other", datetime!(2026-02-01 00:00:00 UTC)));
        for (q, since, why) in [
            (
                Some("x".repeat(256)),
                None,
                "q must be at most 255 characters",
            ),
            (Some("a\0b".into()), None, "q must not contain NUL"),
            (
                None,
                Some("yesterday"),
                "updated_since must be an RFC 3339 timestamp",
            ),
        ] {
            let err = ListFilter::new(q.as_deref(), since).unwrap_err();
            assert!(
                matches!(&err, DomainError::Validation(m) if m == why),
                "{err}"
            );
        }
    }

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
