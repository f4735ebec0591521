//! The workspace: the unit of tenancy that owns clients, projects, entries and subscriptions.

use serde::Serialize;
use time::OffsetDateTime;

use crate::ids::WorkspaceId;

/// A workspace and the defaults its members' data inherits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    /// Identifier.
    pub id: WorkspaceId,
    /// Display name, 1 to 255 characters.
    pub name: String,
    /// IANA time zone name; the `date` of a time entry is its start's date in this zone.
    pub timezone: String,
    /// Default ISO 4217 currency for new clients.
    pub currency: String,
    /// When the workspace was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl Workspace {
    /// The time zone used when none is given.
    pub const DEFAULT_TIMEZONE: &'static str = "UTC";
    /// The currency used when none is given.
    pub const DEFAULT_CURRENCY: &'static str = "USD";
}
