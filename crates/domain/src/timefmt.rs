//! The one timestamp format of every payload and response: RFC 3339 in UTC with `Z`.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `at` as RFC 3339 in UTC, e.g. `2026-01-05T09:00:00Z` or `2026-01-05T09:00:00.123456Z`.
pub fn rfc3339(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        // Only years outside 0..=9999 fail to format, and no stored time is one.
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn utc_with_z_and_only_the_digits_needed() {
        assert_eq!(
            rfc3339(datetime!(2026-01-05 09:00 UTC)),
            "2026-01-05T09:00:00Z"
        );
        assert_eq!(
            rfc3339(datetime!(2026-01-05 10:00 +01:00)),
            "2026-01-05T09:00:00Z"
        );
        assert_eq!(
            rfc3339(datetime!(2026-01-05 09:00:00.1234 UTC)),
            "2026-01-05T09:00:00.1234Z"
        );
    }
}
