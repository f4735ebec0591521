//! Value types shared by several entities — names, e-mail addresses, currencies, time zones,
//! bounded free text — each parsed once, where input enters the domain (a request body, a
//! command's arguments): a value of one of these types is valid by construction, and what takes
//! it never checks it again.

use std::fmt;
use std::ops::Deref;

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

/// A parsed text value: read as `&str` (it derefs to one), turned back into its `String`.
macro_rules! text_value {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

text_value!(
    /// A name of 1 to 255 characters, without surrounding whitespace or NUL.
    Name
);

impl Name {
    /// `value` trimmed, if it has 1 to 255 characters and no NUL; the error names `field`.
    pub fn parse(field: &str, value: &str) -> DomainResult<Self> {
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
        Ok(Self(trimmed.to_owned()))
    }
}

text_value!(
    /// An e-mail address of at most 254 characters, by the HTML5 rules, without surrounding
    /// whitespace.
    Email
);

impl Email {
    /// `value` trimmed, if it is an address.
    pub fn parse(value: &str) -> DomainResult<Self> {
        no_nul("email", value)?;
        let trimmed = value.trim();
        if trimmed.len() <= 254 && trimmed.validate_email() {
            Ok(Self(trimmed.to_owned()))
        } else {
            Err(DomainError::validation(format!(
                "invalid e-mail address: {value}"
            )))
        }
    }

    /// An optional address: absent or blank is none.
    pub fn parse_optional(value: Option<&str>) -> DomainResult<Option<Self>> {
        value
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(Self::parse)
            .transpose()
    }
}

text_value!(
    /// An active ISO 4217 currency code, upper case (for example `EUR`).
    Currency
);

impl Currency {
    /// `value`, if it is an active code in upper case.
    pub fn parse(value: &str) -> DomainResult<Self> {
        match iso_currency::Currency::from_code(value) {
            Some(currency) if currency.code() == value => Ok(Self(value.to_owned())),
            _ => Err(DomainError::validation(format!(
                "currency must be an ISO 4217 code, got: {value}"
            ))),
        }
    }
}

text_value!(
    /// An IANA time-zone name known to the bundled tz database (for example `Europe/Paris`).
    TimeZoneName
);

impl TimeZoneName {
    /// `value`, if the tz database knows it.
    pub fn parse(value: &str) -> DomainResult<Self> {
        jiff::tz::TimeZone::get(value)
            .map(|_| Self(value.to_owned()))
            .map_err(|_| DomainError::validation(format!("unknown time zone: {value}")))
    }
}

text_value!(
    /// Optional free text (a phone number, an address, a note): trimmed, not blank, no NUL, and
    /// at most a length its field sets.
    Text
);

impl Text {
    /// `value` trimmed if it has at most `max` characters and no NUL; blank or absent is none.
    /// The error names `field`.
    pub fn parse_optional(
        field: &str,
        value: Option<&str>,
        max: usize,
    ) -> DomainResult<Option<Self>> {
        let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        no_nul(field, value)?;
        if value.chars().count() > max {
            return Err(DomainError::validation(format!(
                "{field} must be at most {max} characters"
            )));
        }
        Ok(Some(Self(value.to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_refused_everywhere() {
        assert!(Name::parse("name", "a\0b").is_err());
        assert!(Email::parse("a\0@example.com").is_err());
        assert!(Text::parse_optional("note", Some("a\0"), 10).is_err());
        assert!(no_nul("note", "fine").is_ok());
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(Name::parse("name", "  Acme  ").unwrap(), "Acme");
        let err = Name::parse("name", "   ").unwrap_err();
        assert_eq!(err.to_string(), "name must not be empty");
        assert!(Name::parse("name", &"é".repeat(255)).is_ok());
        let err = Name::parse("project name", &"é".repeat(256)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "project name must be at most 255 characters"
        );
    }

    #[test]
    fn timezones_must_be_iana_names() {
        assert!(TimeZoneName::parse("UTC").is_ok());
        assert!(TimeZoneName::parse("Europe/Paris").is_ok());
        assert!(TimeZoneName::parse("America/Argentina/Buenos_Aires").is_ok());
        assert!(TimeZoneName::parse("Mars/Olympus").is_err());
        assert!(TimeZoneName::parse("").is_err());
    }

    #[test]
    fn currencies_must_be_upper_case_iso_codes() {
        assert!(Currency::parse("USD").is_ok());
        assert!(Currency::parse("EUR").is_ok());
        assert!(Currency::parse("usd").is_err());
        assert!(Currency::parse("XYZ").is_err());
        assert!(Currency::parse("US").is_err());
    }

    #[test]
    fn emails_follow_html5_rules() {
        assert_eq!(
            Email::parse(" ada@example.com ").unwrap(),
            "ada@example.com"
        );
        assert!(Email::parse("not-an-email").is_err());
        assert!(Email::parse("a@").is_err());
        assert_eq!(Email::parse_optional(Some("  ")).unwrap(), None);
        assert_eq!(Email::parse_optional(None).unwrap(), None);
        assert!(Email::parse_optional(Some("nope")).is_err());
    }

    #[test]
    fn optional_text_trims_and_bounds() {
        assert_eq!(
            Text::parse_optional("f", Some("  x "), 3).unwrap().unwrap(),
            "x"
        );
        assert_eq!(Text::parse_optional("f", Some("   "), 3).unwrap(), None);
        assert_eq!(Text::parse_optional("f", None, 3).unwrap(), None);
        let err = Text::parse_optional("phone", Some("abcd"), 3).unwrap_err();
        assert_eq!(err.to_string(), "phone must be at most 3 characters");
    }
}
