//! Ports: the traits through which the domain reaches storage, time and randomness.
//!
//! One file per port. Each method's documentation states its contract, errors included.
//! Implementations live in `timetrack-adapters` (PostgreSQL, HTTPS, system clock, OS randomness)
//! and, for tests, in `timetrack-testkit`'s `fakes`, held to the same contract suites
//! (ADR 0008).

mod api_keys;
mod catalog;
mod clients;
mod delivery_log;
mod feed;
mod health;
mod housekeeping;
mod idempotency;
mod invoice_pdf;
mod invoices;
mod local_receivers;
mod queue;
mod rate_limits;
mod rates;
mod reports;
mod resolver;
mod sender;
mod subscriptions;
pub mod system;
mod time_entries;
mod users;
mod workspaces;

pub use api_keys::ApiKeyRepository;
pub use catalog::CatalogRepository;
pub use clients::ClientRepository;
pub use delivery_log::DeliveryLog;
pub use feed::EventFeed;
pub use health::HealthProbe;
pub use housekeeping::{Housekeeping, Purged, Retention};
pub use idempotency::{IDEMPOTENCY_RETENTION, IdempotencyBegin, IdempotencyStore, STALE_CLAIM};
pub use invoice_pdf::InvoicePdf;
pub use invoices::{InvoiceBuilder, InvoiceEvents, InvoiceRepository, InvoiceWrite};
pub use local_receivers::LocalReceivers;
pub use queue::DeliveryQueue;
pub use rate_limits::RateLimitStore;
pub use rates::{PriceChange, RateEffect, RateFilter, RateRepository};
pub use reports::ReportRepository;
pub use resolver::HostResolver;
pub use sender::WebhookSender;
pub use subscriptions::SubscriptionRepository;
pub use system::{Clock, IdGenerator, RandomSource};
pub use time_entries::{EntryFilter, TimeEntryRepository, TimerStop, WriteOutcome};
pub use users::{LAST_OWNER, ROLE_CHANGED, UserRepository};
pub use workspaces::WorkspaceRepository;
