//! Headers a subscriber asks to be sent with every delivery of a webhook (`headers` on subscribe
//! and `PATCH`): a receiver behind a gateway that wants its own `Authorization`, an API key
//! header, a tenant id.
//!
//! They are credentials as often as not, so they are treated like the signing secret: stored
//! sealed, and shown only [masked](CustomHeaders::masked) (in answers, in the request as sent,
//! and in `Debug`, so no log can print one).
//!
//! The rules (`integrations.md` section 4): at most [`MAX_HEADERS`]; a name is an HTTP token of at
//! most [`MAX_NAME_BYTES`] bytes, and no two names are the same letters in another case; a value
//! is at most [`MAX_VALUE_BYTES`] bytes of what HTTP allows in a field value (no control
//! characters but tab) without leading or trailing whitespace (a receiver would never see it); a
//! name the delivery itself decides is refused: `webhook-*`, `x-webhook-*` and `content-*` (the
//! signature and the body's description), `host`, and the hop-by-hop names. `User-Agent` may be
//! set: it replaces the default one.

use std::fmt;

use crate::error::{DomainError, DomainResult};

/// Most custom headers per webhook.
pub const MAX_HEADERS: usize = 10;
/// Longest value, in bytes (UTF-8).
pub const MAX_VALUE_BYTES: usize = 1_000;
/// Longest name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// The published message of a `headers` value that breaks a rule; the detail says which.
pub const INVALID_HEADERS: &str = "Invalid headers";

/// Prefixes of names a delivery sets itself.
const RESERVED_PREFIXES: &[&str] = &["webhook-", "x-webhook-", "content-"];
/// Names a delivery sets itself or that describe one connection only (hop-by-hop, RFC 9110
/// section 7.6.1, with the older `keep-alive`, `proxy-connection` and `trailers` spellings).
const RESERVED_NAMES: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
];

/// Values at least this long show their first [`SHOWN_CHARS`] characters when masked; shorter
/// ones show only their length, so a mask never shows more than a third of a value.
const SHOWN_FROM_CHARS: usize = 12;
/// Characters a masked value shows.
const SHOWN_CHARS: usize = 4;

/// A webhook's custom headers, checked, in the order given. Sent after the delivery's own
/// headers; a `User-Agent` among them replaces the default one.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CustomHeaders(Vec<(String, String)>);

impl fmt::Debug for CustomHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.masked()).finish()
    }
}

impl CustomHeaders {
    /// `pairs` (name, value) as given, checked against the rules (module documentation);
    /// `Invalid` with [`INVALID_HEADERS`] and a detail naming the header otherwise.
    pub fn parse(pairs: Vec<(String, String)>) -> DomainResult<Self> {
        let invalid = |detail: String| DomainError::invalid(INVALID_HEADERS, detail);
        if pairs.len() > MAX_HEADERS {
            return Err(invalid(format!(
                "at most {MAX_HEADERS} headers, not {}",
                pairs.len()
            )));
        }
        let mut seen: Vec<String> = Vec::with_capacity(pairs.len());
        for (name, value) in &pairs {
            let lower = name.to_ascii_lowercase();
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(invalid(format!(
                    "{:?} is not a header name: a name is letters, digits and !#$%&'*+-.^_`|~",
                    clip(name)
                )));
            }
            if name.len() > MAX_NAME_BYTES {
                return Err(invalid(format!(
                    "a header name is at most {MAX_NAME_BYTES} bytes"
                )));
            }
            if RESERVED_NAMES.contains(&lower.as_str())
                || RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p))
            {
                return Err(invalid(format!(
                    "{name} is set by the delivery itself and cannot be a custom header"
                )));
            }
            if seen.contains(&lower) {
                return Err(invalid(format!("{name} is given twice")));
            }
            if value.len() > MAX_VALUE_BYTES {
                return Err(invalid(format!(
                    "the value of {name} is {} bytes; at most {MAX_VALUE_BYTES}",
                    value.len()
                )));
            }
            if value.chars().any(|c| c.is_control() && c != '\t') {
                return Err(invalid(format!(
                    "the value of {name} holds a control character (only tab is allowed)"
                )));
            }
            if value.trim_matches([' ', '\t']) != value {
                return Err(invalid(format!(
                    "the value of {name} starts or ends with whitespace, which a receiver \
                     would not see"
                )));
            }
            seen.push(lower);
        }
        Ok(Self(pairs))
    }

    /// None.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The headers, (name as given, value), in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Whether a header of `name` (any case) is among them.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The headers with each value masked ([`mask`]), in order: what any answer or log shows.
    pub fn masked(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|(name, value)| (name.clone(), mask(value)))
            .collect()
    }

    /// The headers with each value masked, as [`to_stored`](Self::to_stored) writes them (what an
    /// attempt records of the request as sent); `None` when there are none.
    pub fn masked_stored(&self) -> Option<String> {
        (!self.is_empty()).then(|| Self(self.masked()).to_stored())
    }

    /// The headers as stored (before sealing): a JSON array of `[name, value]` pairs, which
    /// keeps their order.
    pub fn to_stored(&self) -> String {
        serde_json::to_string(&self.0).expect("pairs of strings serialize")
    }

    /// Headers as [`to_stored`](Self::to_stored) wrote them. Stored headers were checked when
    /// written; they are not checked again, so that a later, stricter rule never makes a stored
    /// webhook unreadable.
    pub fn from_stored(text: &str) -> DomainResult<Self> {
        serde_json::from_str(text)
            .map(Self)
            .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("stored headers unreadable: {e}")))
    }
}

/// `value` masked: its first four characters and its length in characters (`Bear…(38)`), or only
/// its length for a value shorter than twelve characters (`…(7)`).
pub fn mask(value: &str) -> String {
    let chars = value.chars().count();
    if chars >= SHOWN_FROM_CHARS {
        let shown: String = value.chars().take(SHOWN_CHARS).collect();
        format!("{shown}…({chars})")
    } else {
        format!("…({chars})")
    }
}

/// Whether `b` may be in a header name (RFC 9110 `tchar`).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A bad name cut short for an error message.
fn clip(name: &str) -> String {
    name.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn refused(list: &[(&str, &str)]) -> String {
        match CustomHeaders::parse(pairs(list)) {
            Err(DomainError::Invalid { message, detail }) => {
                assert_eq!(message, INVALID_HEADERS);
                detail
            }
            other => panic!("{list:?} accepted: {other:?}"),
        }
    }

    #[test]
    fn names_values_and_order_are_kept() {
        let headers = CustomHeaders::parse(pairs(&[
            ("Authorization", "Bearer abc"),
            ("X-Api-Key", ""),
            ("User-Agent", "acme/1.0"),
            ("x-tenant", "é ü\tok"),
        ]))
        .unwrap();
        let kept: Vec<_> = headers.iter().collect();
        assert_eq!(
            kept,
            [
                ("Authorization", "Bearer abc"),
                ("X-Api-Key", ""),
                ("User-Agent", "acme/1.0"),
                ("x-tenant", "é ü\tok")
            ]
        );
        assert!(headers.contains("user-agent"));
        assert!(!headers.contains("accept"));
        assert_eq!(
            CustomHeaders::from_stored(&headers.to_stored()).unwrap(),
            headers
        );
        assert!(CustomHeaders::parse(Vec::new()).unwrap().is_empty());
    }

    #[test]
    fn reserved_names_in_any_case_are_refused() {
        for name in [
            "webhook-id",
            "Webhook-Signature",
            "X-Webhook-Event",
            "x-webhook-anything",
            "Content-Type",
            "content-length",
            "Host",
            "Connection",
            "Transfer-Encoding",
            "TE",
            "Upgrade",
            "Keep-Alive",
            "Proxy-Authorization",
            "Trailer",
        ] {
            let detail = refused(&[(name, "x")]);
            assert!(detail.contains(name), "{detail}");
        }
    }

    #[test]
    fn names_must_be_tokens_once_each() {
        for name in ["", "Bad Name", "a:b", "naïve", "a\nb", "(x)", "a/b"] {
            refused(&[(name, "x")]);
        }
        let long = "a".repeat(MAX_NAME_BYTES + 1);
        refused(&[(&long, "x")]);
        CustomHeaders::parse(pairs(&[(&"a".repeat(MAX_NAME_BYTES), "x")])).unwrap();
        let detail = refused(&[("X-Key", "1"), ("x-key", "2")]);
        assert!(detail.contains("twice"), "{detail}");
    }

    #[test]
    fn values_are_bounded_and_free_of_control_characters() {
        CustomHeaders::parse(pairs(&[("X-Long", &"v".repeat(MAX_VALUE_BYTES))])).unwrap();
        refused(&[("X-Long", &"v".repeat(MAX_VALUE_BYTES + 1))]);
        // Bytes, not characters: 500 two-byte characters fit, 501 do not.
        CustomHeaders::parse(pairs(&[("X-Wide", &"é".repeat(500))])).unwrap();
        refused(&[("X-Wide", &"é".repeat(501))]);
        for value in ["a\r\nb", "a\nX-Injected: 1", "a\0", "a\u{7f}", "\u{85}"] {
            refused(&[("X-Bad", value)]);
        }
        for value in [" lead", "trail ", "\tx"] {
            refused(&[("X-Space", value)]);
        }
    }

    #[test]
    fn at_most_ten() {
        let names: Vec<String> = (0..=MAX_HEADERS).map(|i| format!("X-H{i}")).collect();
        let list: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
        CustomHeaders::parse(pairs(&list[..MAX_HEADERS])).unwrap();
        let detail = refused(&list);
        assert!(detail.contains("at most 10"), "{detail}");
    }

    #[test]
    fn masks_show_at_most_four_characters_and_the_length() {
        let bearer = format!("Bearer {}", "x".repeat(31));
        assert_eq!(mask(&bearer), "Bear…(38)");
        assert_eq!(mask("short"), "…(5)");
        assert_eq!(mask(""), "…(0)");
        assert_eq!(mask("ééééééééééééé"), "éééé…(13)");
        let headers = CustomHeaders::parse(pairs(&[("Authorization", &bearer)])).unwrap();
        assert_eq!(
            headers.masked(),
            [("Authorization".to_owned(), "Bear…(38)".to_owned())]
        );
        let shown = format!("{headers:?}");
        assert!(!shown.contains(&bearer), "{shown}");
        assert!(shown.contains("Bear…(38)"), "{shown}");
    }
}
