//! Entities and value objects.

pub mod api_key;
pub mod catalog;
pub mod client;
pub mod custom_headers;
pub mod event;
pub mod feed;
pub mod invoice;
pub mod page;
pub mod rate;
pub mod report;
pub mod role;
pub mod time_entry;
pub(crate) mod token;
pub mod user;
pub mod webhook;
pub mod workspace;

pub use api_key::{ApiKey, ApiKeySecret, KeyHash, Principal, Scope, Scopes};
pub use catalog::{Project, Tag, Task};
pub use client::{Client, ClientDraft, ClientPatch, ClientStatus, ClientType};
pub use custom_headers::CustomHeaders;
pub use event::{Event, EventSubject, EventType};
pub use feed::{FeedCursor, FeedEvent, FeedPage, FeedPosition, FeedRead};
pub use invoice::{
    BillableEntry, ExtraLine, Invoice, InvoiceClient, InvoiceFilter, InvoiceLine, InvoiceSelection,
    InvoiceStatus, LineGroup, Payment, PaymentStatus, Percent, Totals,
};
pub use page::{Cursor, ListFilter, Page, PageRequest};
pub use rate::{
    AppliedRate, MAX_HOURLY_MINOR, PricedEntry, Rate, RateId, RateKind, RateTarget, StoredPrice,
    choose_rate,
};
pub use report::{
    Amounts, DetailedRow, Figures, GroupKey, GroupValue, Named, ReportFilter, Summary,
    SummaryGroup, SummaryRow, UninvoicedRow, summary_tree,
};
pub use role::{Member, Role};
pub use time_entry::{EntrySource, TimeEntry};
pub use user::User;
pub use webhook::{
    AttemptSummary, AuditEntry, DeliveryAttempt, DeliveryDetail, DeliveryId, DeliveryKind,
    DeliveryQuery, DeliveryRecord, DeliveryStatus, DisabledReason, HealthState, HourlyStats,
    ReplayOutcome, ReplayWindow, Subscription, SubscriptionChange, SubscriptionFilters,
    SubscriptionStatus, WebhookHealth, WebhookId,
};
pub use workspace::{InvoiceNumberPattern, Rounding, RoundingMode, Workspace, WorkspaceSettings};
