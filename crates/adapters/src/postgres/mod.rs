//! PostgreSQL adapters: the pool, migrations, error mapping and one repository per port. The
//! repositories take what they share from its own module (`pool`, `errors`, `paging`, `sql`),
//! never from this one, which only declares and re-exports.

mod announce;
mod api_keys;
mod catalog;
mod clients;
mod delivery_log;
mod errors;
mod feed;
pub(crate) mod functions;
mod health;
mod housekeeping;
mod idempotency;
mod installation;
mod invoices;
mod migrate;
mod outbox;
mod paging;
mod pool;
pub mod prepared;
mod queue;
mod rates;
mod replica;
mod reports;
mod reseal;
pub mod schema;
mod sql;
mod subscriptions;
mod time_entries;
mod users;
mod workspaces;

pub use announce::{DeliveryAnnouncer, LOOK_FOR_LISTENERS_EVERY, run_notifier};
pub use api_keys::PgApiKeyRepository;
pub use catalog::PgCatalogRepository;
pub use clients::{PgClientRepository, SEARCH_SQL};
pub use delivery_log::PgDeliveryLog;
pub use errors::{map_db_error, map_pool_error};
pub use feed::PgEventFeed;
pub use health::{PgHealthProbe, READ_ONLY as HEALTH_READ_ONLY};
pub use housekeeping::PgHousekeeping;
pub use idempotency::PgIdempotencyStore;
pub use installation::installation_masks;
pub use invoices::PgInvoiceRepository;
pub use migrate::{MIGRATIONS, run_migrations, sql_functions_fingerprint};
pub use outbox::DELIVERY_CHANNEL;
pub(crate) use pool::opaque_debug;
pub use pool::{
    PgPool, PoolSettings, Pooler, build_pool, build_replica_pool, check_connection, for_writes,
    for_writes_bounded, is_on_this_machine, read_only_seen,
};
pub use queue::PgDeliveryQueue;
pub use rates::PgRateRepository;
pub use replica::{
    CommitPosition, NotAPosition, REPLICA_SAMPLE_EVERY, ReplicaWatch, commit_position,
};
pub use reports::{
    FOR_ONE_AGGREGATE, PgReportRepository, Source as ReportSource, summary_statement,
};
pub use reseal::{Resealed, reseal_all};
pub use subscriptions::PgSubscriptionRepository;
pub use time_entries::PgTimeEntryRepository;
pub use users::PgUserRepository;
pub use workspaces::PgWorkspaceRepository;
