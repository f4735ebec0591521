//! Validation of the value types shared by several entities: names, time zones, currencies,
//! e-mail addresses.

use validator::ValidateEmail;

use crate::error::{DomainError, DomainResult};

/// Longest name (of a workspace, user, client, project, task or tag), in characters.
pub const MAX_NAME_CHARS: usize = 255;

/// Refuses text containing NUL, which no stored text may hold (PostgreSQL rejects it).
pub(crate) fn no_nul(field: &str, value: &str) -> DomainResult<()> {
    if value.contains('\0') {
        return Err(DomainError::validation(format!(
            "{field} must not contain NUL characters"
        )));
    }
    Ok(())
}

/// Returns the name without surrounding whitespace if it has 1 to 255 characters.
pub fn name(field: &str, value: &str) -> DomainResult<String> {
    no_nul(field, value)?;
    let trimmed = value.trim();
    let chars = trimmed.chars().count();
    if chars == 0 {
        return Err(DomainError::validation(format!(
            "{field} must not be empty"
        )));
    }
    if chars > MAX_NAME_CHARS {
        return Err(DomainError::validation(format!(
            "{field} must be at most {MAX_NAME_CHARS} characters"
        )));
    }
    Ok(trimmed.to_owned())
}

/// Accepts an IANA time-zone name known to the bundled tz database (for example `Europe/Paris`).
pub fn timezone(value: &str) -> DomainResult<String> {
    jiff::tz::TimeZone::get(value)
        .map(|_| value.to_owned())
        .map_err(|_| DomainError::validation(format!("unknown time zone: {value}")))
}

/// Accepts an active ISO 4217 currency code in upper case (for example `EUR`).
pub fn currency(value: &str) -> DomainResult<String> {
    match iso_currency::Currency::from_code(value) {
        Some(currency) if currency.code() == value => Ok(value.to_owned()),
        _ => Err(DomainError::validation(format!(
            "currency must be an ISO 4217 code, got: {value}"
        ))),
    }
}

/// Accepts an e-mail address of at most 254 characters, by the HTML5 rules.
pub fn email(value: &str) -> DomainResult<String> {
    no_nul("email", value)?;
    let trimmed = value.trim();
    if trimmed.len() <= 254 && trimmed.validate_email() {
        Ok(trimmed.to_owned())
    } else {
        Err(DomainError::validation(format!(
            "invalid e-mail address: {value}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_refused_everywhere() {
        assert!(name("name", "a\0b").is_err());
        assert!(email("a\0@example.com").is_err());
        assert!(no_nul("note", "fine").is_ok());
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(name("name", "  Acme  ").unwrap(), "Acme");
        assert!(name("name", "   ").is_err());
        assert!(name("name", &"é".repeat(255)).is_ok());
        assert!(name("name", &"é".repeat(256)).is_err());
    }

    #[test]
    fn timezones_must_be_iana_names() {
        assert!(timezone("UTC").is_ok());
        assert!(timezone("Europe/Paris").is_ok());
        assert!(timezone("America/Argentina/Buenos_Aires").is_ok());
        assert!(timezone("Mars/Olympus").is_err());
        assert!(timezone("").is_err());
    }

    #[test]
    fn currencies_must_be_upper_case_iso_codes() {
        assert!(currency("USD").is_ok());
        assert!(currency("EUR").is_ok());
        assert!(currency("usd").is_err());
        assert!(currency("XYZ").is_err());
        assert!(currency("US").is_err());
    }

    #[test]
    fn emails_follow_html5_rules() {
        assert_eq!(email(" ada@example.com ").unwrap(), "ada@example.com");
        assert!(email("not-an-email").is_err());
        assert!(email("a@").is_err());
    }
}
