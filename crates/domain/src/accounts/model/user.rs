//! A user: a person who belongs to one or more workspaces.

use serde::Serialize;
use time::OffsetDateTime;

use crate::ids::UserId;

/// A user account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct User {
    /// Identifier.
    pub id: UserId,
    /// Display name.
    pub name: String,
    /// E-mail address, unique across users (compared case-insensitively).
    pub email: String,
    /// When the user was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}
