//! Adapters of timetrack's ports: PostgreSQL persistence (diesel-async on a deadpool pool), the
//! private PostgreSQL cluster, and the system clock, id generator and random source.

pub mod http;
pub mod listen;
pub mod local_postgres;
pub mod metrics;
pub mod pdf;
pub mod postgres;
pub mod ratelimit;
pub mod resolver;
pub mod search_slots;
pub mod secrets;
pub mod system;
pub mod throttle;
pub mod worker;

pub use http::{HyperWebhookSender, SenderSettings};
pub use listen::ListenDir;
pub use local_postgres::{Durability, LocalPostgres};
pub use metrics::Metrics;
pub use pdf::KrillaInvoicePdf;
pub use postgres::{
    PgPool, PoolSettings, Pooler, build_pool, check_connection, is_on_this_machine, run_migrations,
};
pub use ratelimit::{InMemoryRateLimitStore, PgRateLimitStore};
pub use resolver::SystemResolver;
pub use search_slots::{SearchSlots, SlottedSearches};
pub use secrets::{SecretBox, SecretKey};
pub use system::{OsRandom, SystemClock, UuidV7Ids};
pub use throttle::LogThrottle;
pub use worker::{WorkerSettings, run_housekeeping, run_listener, run_worker};
