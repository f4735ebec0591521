//! Services: the product's rules, written against ports only.

pub mod account;
pub mod admin;
pub mod admission;
pub mod auth;
pub mod catalog;
pub mod clients;
pub mod delivery;
pub mod feed;
pub mod invoices;
pub mod keys;
pub mod rates;
pub mod reports;
pub mod time_entries;
pub mod webhooks;
pub mod workspace;

pub use account::{AccountService, Profile};
pub use admin::{AdminService, NewWorkspace};
pub use admission::{Admission, AdmissionLimits, Admitted, Refusal};
pub use auth::{Access, Authenticator};
pub use catalog::{CatalogService, ProjectPatch};
pub use clients::ClientService;
pub use delivery::{DeliveryService, DeliverySettings};
pub use feed::FeedService;
pub use invoices::{InvoicePatch, InvoiceRequest, InvoiceService, InvoiceView, NewPayment};
pub use keys::{KeyService, NewKey};
pub use rates::{EntryPricing, NewRate, PriceLine, RateService, entry_pricing};
pub use reports::{ReportRequest, ReportScope, ReportService, Visibility};
pub use time_entries::{EntryDraft, EntryPatch, TimeEntryService};
pub use webhooks::{
    DeliveryFilter, NewSubscription, ReplayRequest, RotatedSecret, WebhookChange, WebhookService,
    WebhookSettings,
};
pub use workspace::{WorkspacePatch, WorkspaceService};

/// How many times an update or a delete is tried against concurrent changes of the same row
/// (each try re-reads it, so the event describes exactly the change written).
pub(crate) const WRITE_ATTEMPTS: usize = 5;

/// The workspace `id` with its settings; `NotFound("workspace")` if there is none.
pub(crate) async fn workspace_and_settings(
    workspaces: &dyn crate::ports::WorkspaceRepository,
    id: crate::ids::WorkspaceId,
) -> crate::error::DomainResult<(crate::model::Workspace, crate::model::WorkspaceSettings)> {
    workspaces
        .with_settings(id)
        .await?
        .ok_or(crate::error::DomainError::NotFound("workspace"))
}

/// `Ok` when `caller` may change the catalog (clients, projects, tasks, tags): an admin always,
/// a member when the workspace's `members_manage_catalog` allows it; 403 otherwise.
pub(crate) async fn require_catalog(
    workspaces: &dyn crate::ports::WorkspaceRepository,
    caller: &crate::model::Principal,
) -> crate::error::DomainResult<()> {
    if caller.role.administers() {
        return Ok(());
    }
    let settings = workspaces
        .settings(caller.workspace_id)
        .await?
        .ok_or(crate::error::DomainError::NotFound("workspace"))?;
    caller.require_catalog(&settings)
}

/// The conflict after [`WRITE_ATTEMPTS`] lost races.
pub(crate) fn kept_changing(what: &str) -> crate::error::DomainError {
    crate::error::DomainError::Conflict(format!("The {what} kept changing; try again"))
}

/// An event of `event_type` in `workspace` about the entity `ordering_key`, its body the
/// serialized `payload`.
pub(crate) fn event_of(
    id: crate::ids::EventId,
    workspace: crate::ids::WorkspaceId,
    event_type: crate::model::EventType,
    payload: &impl serde::Serialize,
    created_at: time::OffsetDateTime,
    subject: crate::model::EventSubject,
    ordering_key: impl std::fmt::Display,
) -> crate::error::DomainResult<crate::model::Event> {
    Ok(crate::model::Event {
        id,
        workspace_id: workspace,
        event_type,
        body: crate::payload::to_body(payload)?,
        created_at,
        subject,
        ordering_key: ordering_key.to_string(),
    })
}
