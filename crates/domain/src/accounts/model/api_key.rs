//! API keys: the secret handed to a caller once, its stored hash, and the principal it stands for.

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::accounts::model::Role;
use crate::ids::{ApiKeyId, UserId, WorkspaceId};
use crate::system::RandomSource;

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
            crate::accounts::model::token::base62(random, Self::BODY_LEN)
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

/// What a key may do, beside what its user's role allows (`integrations.md` section 4): a key
/// made for an assistant or a Zap holds only what that needs. Scopes never widen a role: a
/// request needs both the role's permission and the key's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Every read the role allows.
    Read,
    /// Time entries and timers.
    TimeWrite,
    /// Clients, projects, tasks and tags.
    CatalogWrite,
    /// Rates, invoices, payments.
    BillingWrite,
    /// Webhook subscriptions and everything under them (tests, replays, the delivery log).
    Webhooks,
    /// The workspace's settings, its members, and keys.
    Admin,
}

impl Scope {
    /// Every scope, in the order they are shown.
    pub const ALL: [Self; 6] = [
        Self::Read,
        Self::TimeWrite,
        Self::CatalogWrite,
        Self::BillingWrite,
        Self::Webhooks,
        Self::Admin,
    ];

    /// The published name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::TimeWrite => "time:write",
            Self::CatalogWrite => "catalog:write",
            Self::BillingWrite => "billing:write",
            Self::Webhooks => "webhooks",
            Self::Admin => "admin",
        }
    }

    /// The scope of a published name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of [`Scope`]s.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scopes(u8);

impl Scopes {
    /// Every scope: a key made by the admin CLI, or without `scopes`.
    pub const ALL: Self = Self(0b11_1111);
    /// None.
    pub const NONE: Self = Self(0);

    /// The set of `scopes`.
    pub fn of(scopes: impl IntoIterator<Item = Scope>) -> Self {
        Self(scopes.into_iter().fold(0, |bits, s| bits | s.bit()))
    }

    /// The set named by `names` (duplicates collapse); `Err(name)` for the first unknown one.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut bits = 0;
        for name in names {
            bits |= Scope::parse(name).ok_or_else(|| name.to_owned())?.bit();
        }
        Ok(Self(bits))
    }

    /// Whether `scope` is in the set.
    pub fn has(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// Whether every scope of `other` is in this set.
    pub fn covers(self, other: Self) -> bool {
        other.0 & !self.0 == 0
    }

    /// The scopes, in [`Scope::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.has(*s))
    }

    /// The published names, in order.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Scope::as_str).collect()
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

impl Serialize for Scopes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.names())
    }
}

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
    /// What it may do ([`Scopes::ALL`] for a key made by the admin CLI).
    pub scopes: Scopes,
    /// When it stops working, if it does: from then on it is refused as a revoked key is.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
}

impl ApiKey {
    /// Who acts when this key is presented, with `role` in the key's workspace.
    pub fn principal(&self, role: Role) -> Principal {
        Principal {
            api_key_id: self.id,
            user_id: self.user_id,
            workspace_id: self.workspace_id,
            role,
            scopes: self.scopes,
        }
    }

    /// Whether it has expired at `now`.
    pub fn expired_at(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
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
    /// What the key may do besides what the role allows.
    pub scopes: Scopes,
}

impl Principal {
    /// `Forbidden` unless the key holds `scope`: 403 `{"error": "Forbidden", "detail": "this key
    /// lacks the scope ..."}`.
    pub fn require(&self, scope: Scope) -> crate::DomainResult<()> {
        if self.scopes.has(scope) {
            Ok(())
        } else {
            Err(crate::DomainError::LacksScope(scope.as_str()))
        }
    }
}
