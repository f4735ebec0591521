//! Clients: the companies and people a workspace tracks time for.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, WorkspaceId};
use crate::values::{Currency, Email, Name, Text};

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

/// The fields of a new client, parsed; unset ones take their defaults (company, active, no
/// contact details, the workspace's currency).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientDraft {
    /// Name (required).
    pub name: Name,
    /// Type; `company` when unset.
    pub client_type: Option<ClientType>,
    /// Status; `active` when unset.
    pub status: Option<ClientStatus>,
    /// E-mail address.
    pub email: Option<Email>,
    /// Phone number (at most [`MAX_PHONE_CHARS`]).
    pub phone: Option<Text>,
    /// Address (at most [`MAX_ADDRESS_CHARS`]).
    pub address: Option<Text>,
    /// Notes (at most [`MAX_NOTE_CHARS`]).
    pub note: Option<Text>,
    /// Currency; the workspace's when unset.
    pub currency: Option<Currency>,
}

impl ClientDraft {
    /// A draft with `name` and every other field unset.
    pub fn named(name: Name) -> Self {
        Self {
            name,
            client_type: None,
            status: None,
            email: None,
            phone: None,
            address: None,
            note: None,
            currency: None,
        }
    }
}

/// Changes to a client, parsed: `None` leaves a field as it is; for optional fields `Some(None)`
/// clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientPatch {
    /// New name.
    pub name: Option<Name>,
    /// New type.
    pub client_type: Option<ClientType>,
    /// New status.
    pub status: Option<ClientStatus>,
    /// New e-mail, or `Some(None)` to clear it.
    pub email: Option<Option<Email>>,
    /// New phone, or `Some(None)` to clear it.
    pub phone: Option<Option<Text>>,
    /// New address, or `Some(None)` to clear it.
    pub address: Option<Option<Text>>,
    /// New note, or `Some(None)` to clear it.
    pub note: Option<Option<Text>>,
    /// New currency.
    pub currency: Option<Currency>,
}

impl ClientPatch {
    /// Applies the patch to `client`.
    pub(crate) fn apply(&self, client: &mut Client) {
        if let Some(name) = &self.name {
            client.name = name.to_string();
        }
        if let Some(client_type) = self.client_type {
            client.client_type = client_type;
        }
        if let Some(status) = self.status {
            client.status = status;
        }
        if let Some(email) = &self.email {
            client.email = email.as_ref().map(Email::to_string);
        }
        if let Some(phone) = &self.phone {
            client.phone = phone.as_ref().map(Text::to_string);
        }
        if let Some(address) = &self.address {
            client.address = address.as_ref().map(Text::to_string);
        }
        if let Some(note) = &self.note {
            client.note = note.as_ref().map(Text::to_string);
        }
        if let Some(currency) = &self.currency {
            client.currency = currency.to_string();
        }
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
}
