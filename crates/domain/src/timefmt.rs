//! The one timestamp format of every payload and response, RFC 3339 in UTC with `Z`, and the
//! range of times the service accepts.
//!
//! RFC 3339 has four-digit years, and every time is also shown as a calendar date in a workspace's
//! time zone (a payload's `date`), so an accepted time must stay within years 1 to 9999 in every
//! zone: [`EARLIEST`] and [`LATEST`] keep a day's margin at both ends. PostgreSQL holds far more,
//! so the bound is the format's, and checking it where a time enters (a body, a query parameter, a
//! cursor) means no conversion further in can overflow.

use time::format_description::well_known::Rfc3339;
use time::macros::datetime;
use time::{Date, OffsetDateTime, UtcOffset};

use crate::error::{DomainError, DomainResult};

/// The earliest time accepted: 0001-01-02T00:00:00Z.
pub const EARLIEST: OffsetDateTime = datetime!(0001-01-02 00:00 UTC);
/// The latest time accepted: 9999-12-30T23:59:59.999999Z.
pub const LATEST: OffsetDateTime = datetime!(9999-12-30 23:59:59.999_999 UTC);

/// `at` in UTC if it lies within [`EARLIEST`]..=[`LATEST`]; `None` otherwise (also when the
/// conversion to UTC itself would leave the calendar).
pub(crate) fn within_range(at: OffsetDateTime) -> Option<OffsetDateTime> {
    at.checked_to_offset(UtcOffset::UTC)
        .filter(|utc| (EARLIEST..=LATEST).contains(utc))
}

/// Parses the RFC 3339 timestamp `value` of the input `field`, in UTC.
///
/// Returns `Validation("<field> must be an RFC 3339 timestamp")` for anything else, and
/// `Validation("<field> must be between 0001-01-02T00:00:00Z and 9999-12-30T23:59:59Z")` for a
/// time outside the accepted range.
pub fn parse_rfc3339(field: &str, value: &str) -> DomainResult<OffsetDateTime> {
    let at = OffsetDateTime::parse(value, &Rfc3339)
        .map_err(|_| DomainError::validation(format!("{field} must be an RFC 3339 timestamp")))?;
    within_range(at).ok_or_else(|| {
        DomainError::validation(format!(
            "{field} must be between 0001-01-02T00:00:00Z and 9999-12-30T23:59:59Z"
        ))
    })
}

/// Parses the calendar date `value` (`YYYY-MM-DD`) of the input `field`, within the years 0002 to
/// 9998 (so that the day's start and end in every time zone stay within [`EARLIEST`]..=[`LATEST`]).
///
/// Returns `Validation("<field> must be a date (YYYY-MM-DD)")` for anything else.
pub fn parse_date(field: &str, value: &str) -> DomainResult<Date> {
    let invalid = || DomainError::validation(format!("{field} must be a date (YYYY-MM-DD)"));
    let date = Date::parse(value, DATE).map_err(|_| invalid())?;
    if !(2..=9998).contains(&date.year()) {
        return Err(DomainError::validation(format!(
            "{field} must be between 0002-01-01 and 9998-12-31"
        )));
    }
    Ok(date)
}

/// The calendar date of `at` in the IANA time zone `timezone` (the day an entry belongs to).
pub fn local_day(at: OffsetDateTime, timezone: &str) -> DomainResult<Date> {
    let tz = jiff::tz::TimeZone::get(timezone)
        .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("time zone {timezone}: {e}")))?;
    let instant = jiff::Timestamp::from_second(at.unix_timestamp())
        .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("timestamp out of range: {e}")))?;
    let day = instant.to_zoned(tz).date();
    time::Month::try_from(day.month() as u8)
        .ok()
        .and_then(|month| {
            Date::from_calendar_date(i32::from(day.year()), month, day.day() as u8).ok()
        })
        .ok_or_else(|| DomainError::Unexpected(anyhow::anyhow!("date out of range: {day}")))
}

/// `YYYY-MM-DD`.
const DATE: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// `date` as `YYYY-MM-DD`.
pub fn iso_date(date: Date) -> String {
    date.format(DATE).unwrap_or_else(|_| date.to_string())
}

/// `at` as RFC 3339 in UTC, e.g. `2026-01-05T09:00:00Z` or `2026-01-05T09:00:00.123456Z`.
///
/// Times outside the four-digit years (which no input can produce: see [`parse_rfc3339`]) are
/// shown at the nearest end of them, so the output is RFC 3339 whatever is stored.
pub fn rfc3339(at: OffsetDateTime) -> String {
    const FIRST: OffsetDateTime = datetime!(0000-01-01 00:00 UTC);
    const LAST: OffsetDateTime = datetime!(9999-12-31 23:59:59.999_999 UTC);
    let utc = at
        .checked_to_offset(UtcOffset::UTC)
        .unwrap_or(if at.year() < 0 { FIRST } else { LAST });
    utc.clamp(FIRST, LAST)
        .format(&Rfc3339)
        .unwrap_or_else(|_| "0000-01-01T00:00:00Z".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn times_outside_four_digit_years_are_shown_at_their_edge_never_as_numbers() {
        assert_eq!(
            rfc3339(datetime!(-0001-12-31 23:30 UTC)),
            "0000-01-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339(datetime!(0000-01-01 00:30 +01:00)),
            "0000-01-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339(datetime!(9999-12-31 23:30 -01:00)),
            "9999-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            rfc3339(datetime!(0000-01-01 00:00 UTC)),
            "0000-01-01T00:00:00Z"
        );
    }

    #[test]
    fn inputs_are_parsed_to_utc_within_the_range() {
        assert_eq!(
            parse_rfc3339("start", "2026-01-05T10:00:00+01:00").unwrap(),
            datetime!(2026-01-05 09:00 UTC)
        );
        assert_eq!(
            parse_rfc3339("start", "2026-01-05T10:00:00+01:00")
                .unwrap()
                .offset(),
            UtcOffset::UTC
        );
        assert_eq!(
            parse_rfc3339("to", "0001-01-02T00:00:00Z").unwrap(),
            EARLIEST
        );
        assert_eq!(
            parse_rfc3339("to", "9999-12-30T23:59:59.999999Z").unwrap(),
            LATEST
        );
    }

    #[test]
    fn inputs_at_the_edges_of_time_are_validation_errors_not_panics() {
        for value in [
            "9999-12-31T23:30:00-01:00",
            "9999-12-31T23:59:59Z",
            "9999-12-31T00:00:00Z",
            "9999-12-30T23:00:00-01:00",
            "0000-01-01T00:00:00Z",
            "0000-01-01T00:30:00+01:00",
            "0001-01-01T00:00:00Z",
            "0001-01-02T00:00:00+00:01",
        ] {
            match parse_rfc3339("to", value) {
                Err(DomainError::Validation(message)) => assert_eq!(
                    message, "to must be between 0001-01-02T00:00:00Z and 9999-12-30T23:59:59Z",
                    "{value}"
                ),
                other => panic!("{value}: {other:?}"),
            }
        }
        for value in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-01-01 00:00:00",
        ] {
            match parse_rfc3339("from", value) {
                Err(DomainError::Validation(message)) => {
                    assert_eq!(message, "from must be an RFC 3339 timestamp", "{value}");
                }
                other => panic!("{value}: {other:?}"),
            }
        }
    }
}
