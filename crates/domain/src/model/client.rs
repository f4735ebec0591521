//! Clients: the companies and people a workspace tracks time for.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, WorkspaceId};
use crate::validate;

/// Whether a client is an organisation or a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientType {
    /// A business or organisation.
    Company,
    /// A person.
    Individual,
}

impl ClientType {
    /// The stored and published spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Company => "company",
            Self::Individual => "individual",
        }
    }

    /// Parses the published spelling.
    pub fn parse(value: &str) -> DomainResult<Self> {
        match value {
            "company" => Ok(Self::Company),
            "individual" => Ok(Self::Individual),
            other => Err(DomainError::validation(format!(
                "type must be company or individual, got: {other}"
            ))),
        }
    }
}

/// Whether a client is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientStatus {
    /// Current.
    Active,
    /// No longer worked for.
    Inactive,
}

impl ClientStatus {
    /// The stored and published spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Inactive => "inactive",
        }
    }

    /// Parses the published spelling.
    pub fn parse(value: &str) -> DomainResult<Self> {
        match value {
            "active" => Ok(Self::Active),
            "inactive" => Ok(Self::Inactive),
            other => Err(DomainError::validation(format!(
                "status must be active or inactive, got: {other}"
            ))),
        }
    }
}

/// A client of a workspace. Optional contact fields are `None` until set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Identifier.
    pub id: ClientId,
    /// The owning workspace.
    pub workspace_id: WorkspaceId,
    /// Client or company name, unique in the workspace case-insensitively.
    pub name: String,
    /// Company or individual.
    pub client_type: ClientType,
    /// Active or inactive.
    pub status: ClientStatus,
    /// Primary contact e-mail.
    pub email: Option<String>,
    /// Contact phone number with country code.
    pub phone: Option<String>,
    /// Business or mailing address.
    pub address: Option<String>,
    /// Free-text notes.
    pub note: Option<String>,
    /// Default billing currency (ISO 4217).
    pub currency: String,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modification time.
    pub updated_at: OffsetDateTime,
}

impl Client {
    /// The key names are compared and searched by: the Unicode lowercase of the name.
    pub fn name_key(name: &str) -> String {
        name.to_lowercase()
    }
}

/// Longest phone number, in characters.
pub const MAX_PHONE_CHARS: usize = 50;
/// Longest address, in characters.
pub const MAX_ADDRESS_CHARS: usize = 1000;
/// Longest note, in characters.
pub const MAX_NOTE_CHARS: usize = 10_000;

/// The fields of a new client; unset ones take their defaults (company, active, no contact
/// details, the workspace's currency).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientDraft {
    /// Name (required).
    pub name: String,
    /// Type; `company` when unset.
    pub client_type: Option<ClientType>,
    /// Status; `active` when unset.
    pub status: Option<ClientStatus>,
    /// E-mail address.
    pub email: Option<String>,
    /// Phone number.
    pub phone: Option<String>,
    /// Address.
    pub address: Option<String>,
    /// Notes.
    pub note: Option<String>,
    /// Currency; the workspace's when unset.
    pub currency: Option<String>,
}

/// Changes to a client: `None` leaves a field as it is; for optional fields `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientPatch {
    /// New name.
    pub name: Option<String>,
    /// New type.
    pub client_type: Option<ClientType>,
    /// New status.
    pub status: Option<ClientStatus>,
    /// New e-mail, or `Some(None)` to clear it.
    pub email: Option<Option<String>>,
    /// New phone, or `Some(None)` to clear it.
    pub phone: Option<Option<String>>,
    /// New address, or `Some(None)` to clear it.
    pub address: Option<Option<String>>,
    /// New note, or `Some(None)` to clear it.
    pub note: Option<Option<String>>,
    /// New currency.
    pub currency: Option<String>,
}

/// Validated optional text: trimmed, empty means unset, at most `max` characters.
pub(crate) fn optional_text(
    field: &str,
    value: Option<&str>,
    max: usize,
) -> DomainResult<Option<String>> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    validate::no_nul(field, value)?;
    if value.chars().count() > max {
        return Err(DomainError::validation(format!(
            "{field} must be at most {max} characters"
        )));
    }
    Ok(Some(value.to_owned()))
}

impl ClientPatch {
    /// Applies the patch to `client`, validating every changed field.
    pub(crate) fn apply(&self, client: &mut Client) -> DomainResult<()> {
        if let Some(name) = &self.name {
            client.name = validate::name("name", name)?;
        }
        if let Some(client_type) = self.client_type {
            client.client_type = client_type;
        }
        if let Some(status) = self.status {
            client.status = status;
        }
        if let Some(email) = &self.email {
            client.email = email
                .as_deref()
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(validate::email)
                .transpose()?;
        }
        if let Some(phone) = &self.phone {
            client.phone = optional_text("phone", phone.as_deref(), MAX_PHONE_CHARS)?;
        }
        if let Some(address) = &self.address {
            client.address = optional_text("address", address.as_deref(), MAX_ADDRESS_CHARS)?;
        }
        if let Some(note) = &self.note {
            client.note = optional_text("note", note.as_deref(), MAX_NOTE_CHARS)?;
        }
        if let Some(currency) = &self.currency {
            client.currency = validate::currency(currency)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_key_is_unicode_lowercase() {
        assert_eq!(Client::name_key("ÉCOLE Ωmega"), "école ωmega");
        assert_eq!(Client::name_key("ПРИВЕТ"), "привет");
    }

    #[test]
    fn types_and_statuses_parse_only_their_spellings() {
        assert_eq!(
            ClientType::parse("individual").unwrap(),
            ClientType::Individual
        );
        assert!(ClientType::parse("Company").is_err());
        assert_eq!(
            ClientStatus::parse("inactive").unwrap(),
            ClientStatus::Inactive
        );
        assert!(ClientStatus::parse("archived").is_err());
    }

    #[test]
    fn optional_text_trims_and_bounds() {
        assert_eq!(
            optional_text("f", Some("  x "), 3).unwrap(),
            Some("x".into())
        );
        assert_eq!(optional_text("f", Some("   "), 3).unwrap(), None);
        assert_eq!(optional_text("f", None, 3).unwrap(), None);
        assert!(optional_text("f", Some("abcd"), 3).is_err());
    }
}
