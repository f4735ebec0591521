//! Encryption at rest of what must stay secret in the database: webhook signing secrets, and the
//! stored responses of idempotent requests (a subscribe's response carries its secret).
//!
//! Values are sealed with ChaCha20-Poly1305 under the key of `TIMETRACK_SECRET_KEY` and stored
//! as `tt1:<key id>:<base64 of nonce and ciphertext>`, where the key id is the first 8 hex digits
//! of the key's SHA-256. A value is opened with whichever configured key its id names, so a key
//! can be rotated: the new key becomes current, the old one stays listed as previous until every
//! value has been sealed again under the new one ([`reseal_all`], which `serve` runs at start).
//! Values stored before encryption existed (plain `whsec_...` secrets, plain JSON responses) are
//! read as they are and sealed by that same pass.

use std::fmt;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use sha2::{Digest, Sha256};

/// The prefix of a sealed value.
const SEALED: &str = "tt1:";
/// Bytes of a nonce.
const NONCE_BYTES: usize = 12;

/// What a sealed value is, bound into its tag so that a value sealed for one use cannot be
/// opened as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A webhook subscription's signing secret.
    WebhookSecret,
    /// A stored response of an idempotent request.
    IdempotentResponse,
    /// A webhook subscription's custom headers (their stored JSON).
    WebhookHeaders,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Self::WebhookSecret => b"timetrack webhook secret",
            Self::IdempotentResponse => b"timetrack idempotent response",
            Self::WebhookHeaders => b"timetrack webhook headers",
        }
    }
}

/// A 256-bit key; its bytes are never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey([u8; 32]);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({})", self.id())
    }
}

impl SecretKey {
    /// A new random key.
    pub fn generate() -> Self {
        Self(rand::random())
    }

    /// Parses 32 bytes written as base64 (standard or URL-safe, padded or not) or as 64 hex
    /// digits, surrounding whitespace ignored.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| anyhow!("not hex"))?
        } else {
            [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
                .iter()
                .find_map(|engine| engine.decode(text).ok())
                .context("a secret key is 32 bytes in base64 or 64 hex digits")?
        };
        let key: [u8; 32] = bytes.try_into().map_err(|bytes: Vec<u8>| {
            anyhow!(
                "a secret key is 32 bytes (256 bits), this one is {}: generate one with \
                 `openssl rand -base64 32`",
                bytes.len()
            )
        })?;
        Ok(Self(key))
    }

    /// The key as base64, for writing it to a file.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    /// The first 8 hex digits of the key's SHA-256, which sealed values carry.
    pub fn id(&self) -> String {
        Sha256::digest(self.0)[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Seals values under the current key and opens values sealed under it or a previous one.
#[derive(Clone)]
pub struct SecretBox {
    current: Arc<(String, ChaCha20Poly1305)>,
    all: Arc<[(String, ChaCha20Poly1305)]>,
}

impl fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretBox")
            .field("current", &self.current.0)
            .field(
                "keys",
                &self.all.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SecretBox {
    /// A box sealing under `current`, and opening under it or any of `previous`.
    pub fn new(current: &SecretKey, previous: &[SecretKey]) -> Self {
        let cipher = |key: &SecretKey| (key.id(), ChaCha20Poly1305::new(&key.0.into()));
        let all: Vec<_> = std::iter::once(current)
            .chain(previous)
            .map(cipher)
            .collect();
        Self {
            current: Arc::new(cipher(current)),
            all: all.into(),
        }
    }

    /// A box with a new random key: for tests and tools whose database lives no longer than
    /// the process.
    pub fn ephemeral() -> Self {
        Self::new(&SecretKey::generate(), &[])
    }

    /// The id of the key values are sealed under.
    pub fn current_id(&self) -> &str {
        &self.current.0
    }

    /// `plain`, sealed under the current key for `purpose`.
    pub fn seal(&self, purpose: Purpose, plain: &str) -> String {
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let sealed = self
            .current
            .1
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plain.as_bytes(),
                    aad: purpose.label(),
                },
            )
            // Encryption fails only for messages of more than 256 GiB.
            .unwrap_or_default();
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        format!(
            "{SEALED}{}:{}",
            self.current.0,
            URL_SAFE_NO_PAD.encode(bytes)
        )
    }

    /// The plain text of a stored value: opened if sealed, as stored if it predates encryption.
    ///
    /// Fails if the value was sealed under a key this box does not have, or was altered.
    pub fn open(&self, purpose: Purpose, stored: &str) -> Result<String> {
        let Some(rest) = stored.strip_prefix(SEALED) else {
            return Ok(stored.to_owned());
        };
        let (id, body) = rest
            .split_once(':')
            .context("a sealed value without a key id")?;
        let Some((_, cipher)) = self.all.iter().find(|(known, _)| known == id) else {
            bail!(
                "a value is sealed under key {id}, which is neither TIMETRACK_SECRET_KEY nor \
                 one of TIMETRACK_PREVIOUS_SECRET_KEYS"
            );
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .context("a sealed value that is not base64")?;
        if bytes.len() < NONCE_BYTES {
            bail!("a sealed value too short to hold its nonce");
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let plain = cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: purpose.label(),
                },
            )
            .map_err(|_| anyhow!("a sealed value under key {id} does not open (altered?)"))?;
        String::from_utf8(plain).context("a sealed value that is not text")
    }

    /// Whether `stored` is sealed under the current key (so a reseal leaves it alone).
    pub fn is_current(&self, stored: &str) -> bool {
        stored
            .strip_prefix(SEALED)
            .and_then(|rest| rest.split_once(':'))
            .is_some_and(|(id, _)| id == self.current.0)
    }

    /// The `LIKE` pattern of values sealed under the current key.
    pub fn current_pattern(&self) -> String {
        format!("{SEALED}{}:%", self.current.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_to_what_was_sealed_and_never_show_it() {
        let secrets = SecretBox::ephemeral();
        let plain = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let sealed = secrets.seal(Purpose::WebhookSecret, plain);
        assert!(sealed.starts_with(&format!("tt1:{}:", secrets.current_id())));
        assert!(!sealed.contains("MfKQ9r8G"));
        assert_ne!(
            sealed,
            secrets.seal(Purpose::WebhookSecret, plain),
            "a nonce each"
        );
        assert_eq!(
            secrets.open(Purpose::WebhookSecret, &sealed).unwrap(),
            plain
        );
        assert!(secrets.is_current(&sealed));
    }

    #[test]
    fn a_value_opens_only_for_its_purpose_and_unaltered() {
        let secrets = SecretBox::ephemeral();
        let sealed = secrets.seal(Purpose::IdempotentResponse, "{}");
        assert!(secrets.open(Purpose::WebhookSecret, &sealed).is_err());
        let mut altered = sealed.into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(secrets.open(Purpose::IdempotentResponse, &altered).is_err());
        assert!(
            secrets
                .open(Purpose::IdempotentResponse, "tt1:abcd:")
                .is_err()
        );
    }

    #[test]
    fn after_a_rotation_old_values_open_under_the_previous_key() {
        let (old, new) = (SecretKey::generate(), SecretKey::generate());
        let before = SecretBox::new(&old, &[]);
        let sealed = before.seal(Purpose::WebhookSecret, "whsec_x");
        let rotated = SecretBox::new(&new, std::slice::from_ref(&old));
        assert_eq!(
            rotated.open(Purpose::WebhookSecret, &sealed).unwrap(),
            "whsec_x"
        );
        assert!(!rotated.is_current(&sealed));
        let without_old = SecretBox::new(&new, &[]);
        let err = without_old
            .open(Purpose::WebhookSecret, &sealed)
            .unwrap_err();
        assert!(err.to_string().contains(&old.id()), "{err}");
    }

    #[test]
    fn values_from_before_encryption_are_read_as_stored() {
        let secrets = SecretBox::ephemeral();
        assert_eq!(
            secrets.open(Purpose::WebhookSecret, "whsec_abc").unwrap(),
            "whsec_abc"
        );
        assert!(!secrets.is_current("whsec_abc"));
    }

    #[test]
    fn keys_are_32_bytes_in_base64_or_hex() {
        let key = SecretKey::generate();
        assert_eq!(SecretKey::parse(&key.to_base64()).unwrap(), key);
        assert_eq!(
            SecretKey::parse(&format!(" {}\n", key.to_base64())).unwrap(),
            key
        );
        let hex: String = key.0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(SecretKey::parse(&hex).unwrap(), key);
        let short = SecretKey::parse(&STANDARD.encode([1u8; 16])).unwrap_err();
        assert!(short.to_string().contains("this one is 16"), "{short}");
        assert!(SecretKey::parse("not a key").is_err());
        assert!(!format!("{key:?}").contains(&key.to_base64()));
    }
}
