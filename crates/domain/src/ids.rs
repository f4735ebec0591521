//! Typed identifiers, so that a client id can never be passed where a workspace id is expected.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// The underlying UUID.
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl From<Uuid> for $name {
            fn from(value: Uuid) -> Self {
                Self(value)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

uuid_id!(
    /// Identifies a workspace, the unit of tenancy.
    WorkspaceId
);
uuid_id!(
    /// Identifies a user.
    UserId
);
uuid_id!(
    /// Identifies an API key (not the secret key itself).
    ApiKeyId
);
uuid_id!(
    /// Identifies a client of a workspace.
    ClientId
);
uuid_id!(
    /// Identifies a project.
    ProjectId
);
uuid_id!(
    /// Identifies a task of a project.
    TaskId
);
uuid_id!(
    /// Identifies a tag.
    TagId
);
uuid_id!(
    /// Identifies a time entry.
    TimeEntryId
);
uuid_id!(
    /// Identifies an event in the outbox; it is the `webhook-id` of every delivery of the event.
    EventId
);
uuid_id!(
    /// Identifies an hourly rate.
    RateId
);
uuid_id!(
    /// Identifies an invoice.
    InvoiceId
);
uuid_id!(
    /// Identifies a line of an invoice.
    InvoiceLineId
);
uuid_id!(
    /// Identifies a payment recorded on an invoice.
    PaymentId
);
