//! Formatting shared by responses.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `at` as RFC 3339 in UTC with a `Z` suffix, e.g. `2026-01-05T09:00:00.123456Z`.
pub fn rfc3339(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}
