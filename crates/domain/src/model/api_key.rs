//! API keys: the secret handed to a caller once, its stored hash, and the principal it stands for.

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::ids::{ApiKeyId, UserId, WorkspaceId};
use crate::model::Role;
use crate::ports::system::RandomSource;

/// A plain API key, `tt_` followed by 43 base62 characters (256 random bits).
///
/// It exists in memory only: it is printed once when created, and only its [`KeyHash`] is stored.
/// `Debug` shows the prefix alone, so the key cannot leak into logs.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    /// Every key starts with this.
    pub const PREFIX: &'static str = "tt_";
    /// Number of base62 characters after the prefix; 62^43 > 2^256.
    pub const BODY_LEN: usize = 43;
    /// Characters of the key kept in clear (`key_prefix`) to tell keys apart.
    pub const SHOWN_LEN: usize = 10;

    /// Draws a new key from `random`, each character uniform over the 62 symbols.
    pub fn generate(random: &dyn RandomSource) -> Self {
        Self(format!(
            "{}{}",
            Self::PREFIX,
            super::token::base62(random, Self::BODY_LEN)
        ))
    }

    /// Accepts a presented key only if it has the exact shape of a generated one.
    pub fn parse(presented: &str) -> Option<Self> {
        let body = presented.strip_prefix(Self::PREFIX)?;
        (body.len() == Self::BODY_LEN && body.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| Self(presented.to_owned()))
    }

    /// The key as text, to show to its owner exactly once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The SHA-256 of the key, which is what is stored and looked up.
    pub fn hash(&self) -> KeyHash {
        KeyHash(Sha256::digest(self.0.as_bytes()).into())
    }

    /// The first characters of the key, safe to store and display.
    pub fn shown_prefix(&self) -> String {
        self.0[..Self::SHOWN_LEN].to_owned()
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeySecret({}…)", self.shown_prefix())
    }
}

/// SHA-256 of an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash(pub [u8; 32]);

/// A stored API key, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiKey {
    /// Identifier, used to revoke the key.
    pub id: ApiKeyId,
    /// The workspace the key acts in.
    pub workspace_id: WorkspaceId,
    /// The user the key acts for.
    pub user_id: UserId,
    /// Optional label.
    pub name: Option<String>,
    /// The first characters of the key.
    pub prefix: String,
    /// When the key was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When the key was revoked, if it was.
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    /// Last successful authentication, recorded at most once a minute.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
}

impl ApiKey {
    /// Who acts when this key is presented, with `role` in the key's workspace.
    pub fn principal(&self, role: Role) -> Principal {
        Principal {
            api_key_id: self.id,
            user_id: self.user_id,
            workspace_id: self.workspace_id,
            role,
        }
    }
}

/// The result of authentication: who is calling, in which workspace, with which key.
///
/// Every key belongs to a (user, workspace) membership, so a principal always carries a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The key that was presented.
    pub api_key_id: ApiKeyId,
    /// The user the key belongs to.
    pub user_id: UserId,
    /// The workspace the key acts in.
    pub workspace_id: WorkspaceId,
    /// The user's role in that workspace, as read with the key: a write reads it afresh, a read
    /// may use what was read up to the key cache's lifetime (30 s at most) ago.
    pub role: Role,
}
