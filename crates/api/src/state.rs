//! What the handlers share: the services, wired to their adapters, and the request-level
//! settings. Built once by `serve` (or a test) and handed to [`crate::build_app`].

use std::sync::Arc;

use actix_web::web;

use timetrack_adapters::postgres::{
    DeliveryAnnouncer, PgApiKeyRepository, PgCatalogRepository, PgClientRepository, PgDeliveryLog,
    PgEventFeed, PgHealthProbe, PgIdempotencyStore, PgInvoiceRepository, PgRateRepository,
    PgReportRepository, PgSubscriptionRepository, PgTimeEntryRepository, PgUserRepository,
    PgWorkspaceRepository,
};
use timetrack_adapters::{InMemoryRateLimitStore, PgRateLimitStore, SearchSlots, SlottedSearches};
use timetrack_adapters::{KrillaInvoicePdf, Metrics, PgPool};
use timetrack_adapters::{OsRandom, SecretBox, SystemResolver, UuidV7Ids};
use timetrack_domain::masked::Masks;
use timetrack_domain::ports::{
    ClientRepository, Clock, HealthProbe, IdempotencyStore, InvoicePdf, LocalReceivers,
    RateLimitStore,
};
use timetrack_domain::ratelimit::RatePolicy;
use timetrack_domain::services::{
    AccountService, Admission, AdmissionLimits, Authenticator, CatalogService, ClientService,
    FeedService, InvoiceService, KeyService, RateService, ReportService, TimeEntryService,
    WebhookService, WebhookSettings, WorkspaceService,
};

use crate::client_ip::TrustedProxies;
use crate::replica::{ReadAfter, Routing};
use timetrack_domain::model::Principal;
use timetrack_domain::services::Access;

/// Everything the handlers need, cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Authenticates callers and applies their rate limits.
    pub admission: Admission,
    /// The proxies whose forwarding headers name the client.
    pub trusted_proxies: TrustedProxies,
    /// The caller's own account.
    pub accounts: AccountService,
    /// The caller's workspace: settings, members and roles.
    pub workspace: WorkspaceService,
    /// Rates, and the prices of entries.
    pub rates: RateService,
    /// Summary, detailed and uninvoiced reports.
    pub reports: ReportService,
    /// Invoices from tracked time.
    pub invoices: InvoiceService,
    /// Keys made, listed and revoked by their owners (`/api/keys`).
    pub keys: KeyService,
    /// Clients.
    pub clients: ClientService,
    /// Webhook subscriptions.
    pub webhooks: WebhookService,
    /// The catch-up feed of events.
    pub feed: FeedService,
    /// Projects, tasks and tags.
    pub catalog: CatalogService,
    /// Time entries.
    pub entries: TimeEntryService,
    /// Reachability of the database.
    pub health: Arc<dyn HealthProbe>,
    /// The current time.
    pub clock: Arc<dyn Clock>,
    /// Where this copy's rate-limit counts live when they are kept in this process.
    in_process_limiter: Arc<dyn RateLimitStore>,
    /// Idempotency keys of POST requests.
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// This process's Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Hears of the deliveries that writes queue, after they commit (`serve` wakes its worker
    /// and the other processes with it).
    pub announcer: DeliveryAnnouncer,
    /// The settings the state was built with.
    settings: StateSettings,
    /// The pool every repository of this copy runs on (the primary's).
    pool: PgPool,
    /// The replica that serves reads tolerating lag, when `--database-replica-url` names one.
    replica: Option<ReplicaReads>,
}

/// The services on a replica's pool, and how reads are routed to them.
#[derive(Clone)]
struct ReplicaReads {
    state: Arc<AppState>,
    routing: Routing,
}

/// The rate limits admission applies.
#[derive(Debug, Clone, Copy)]
pub struct RateLimits {
    /// Per API key, on every authenticated endpoint.
    pub per_key: RatePolicy,
    /// Failed authentications per peer address.
    pub auth_failures: RatePolicy,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_key: RatePolicy {
                per_minute: 100,
                per_second: 10,
            },
            auth_failures: RatePolicy {
                per_minute: 30,
                per_second: u32::MAX,
            },
        }
    }
}

/// Where rate-limit counts are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateLimitStoreKind {
    /// In this process (exact, per instance).
    #[default]
    Memory,
    /// In PostgreSQL, shared by every instance on the database.
    Postgres,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

/// Settings of the state that tests and operators may vary.
#[derive(Debug, Clone)]
pub struct StateSettings {
    /// How long a verified key is trusted before storage is asked again (at most 30 s).
    pub auth_cache_ttl: time::Duration,
    /// Bound of the health check's database query.
    pub health_timeout: std::time::Duration,
    /// Webhook rules (SSRF guard, subscription cap).
    pub webhooks: WebhookSettings,
    /// Rate limits.
    pub rate_limits: RateLimits,
    /// Where rate-limit counts are kept.
    pub rate_limit_store: RateLimitStoreKind,
    /// Most client searches on the database at once through one copy of the state (each
    /// worker's copy admits its own); `None` admits every search at once.
    pub search_concurrency: Option<usize>,
    /// Proxies whose `X-Forwarded-For`/`Forwarded` name the client (none by default).
    pub trusted_proxies: TrustedProxies,
    /// Seals webhook secrets and stored idempotent responses at rest. The default is a new
    /// random key, for tests and tools whose database lives no longer than the process; `serve`
    /// always passes `TIMETRACK_SECRET_KEY`'s.
    pub secrets: SecretBox,
    /// Show delivery ids and feed positions to tenants ([`Masks`]). The default is of a new
    /// random key, for tests whose database is read by this process alone; `serve` always
    /// passes the installation's, from its database, so that every process shows a number
    /// alike.
    pub masks: Masks,
    /// The loopback ports where `timetrack listen` receives now, which subscriptions may name
    /// (`serve` on its private cluster); `None`: none.
    pub local_receivers: Option<Arc<dyn LocalReceivers>>,
}

impl Default for StateSettings {
    fn default() -> Self {
        Self {
            auth_cache_ttl: time::Duration::seconds(5),
            health_timeout: std::time::Duration::from_secs(2),
            webhooks: WebhookSettings::default(),
            rate_limits: RateLimits::default(),
            rate_limit_store: RateLimitStoreKind::Memory,
            search_concurrency: None,
            trusted_proxies: TrustedProxies::default(),
            secrets: SecretBox::ephemeral(),
            masks: Masks::new(&rand::random()),
            local_receivers: None,
        }
    }
}

/// What every copy of the state shares, whichever pool it runs on: the rate-limit counts when
/// they are kept in this process, the metrics and the delivery announcer.
struct Shared {
    /// Used when the counts are kept in memory; a PostgreSQL store is made on each copy's pool.
    in_process_limiter: Arc<dyn RateLimitStore>,
    metrics: Arc<Metrics>,
    announcer: DeliveryAnnouncer,
}

impl AppState {
    /// Wires the PostgreSQL adapters and the domain services on `pool`.
    pub fn new(pool: PgPool, clock: Arc<dyn Clock>, settings: StateSettings) -> Self {
        let shared = Shared {
            in_process_limiter: Arc::new(InMemoryRateLimitStore::default()),
            metrics: Arc::new(Metrics::new()),
            announcer: DeliveryAnnouncer::new(),
        };
        Self::assemble(pool, clock, settings, shared)
    }

    /// The same state with every repository on `pool` instead: one HTTP worker's own pool, so
    /// that its queries run on connections driven by its own thread. Rate-limit counts kept in
    /// memory, metrics and the delivery announcer stay shared with `self`; each copy keeps its
    /// own cache of verified keys.
    pub fn on_pool(&self, pool: PgPool) -> Self {
        let shared = Shared {
            in_process_limiter: self.in_process_limiter.clone(),
            metrics: self.metrics.clone(),
            announcer: self.announcer.clone(),
        };
        let mut copy = Self::assemble(pool, self.clock.clone(), self.settings.clone(), shared);
        copy.replica = self.replica.clone();
        copy
    }

    /// The same state with the reads that tolerate lag served from `replica`'s pool when
    /// `routing` allows (see [`crate::read_lagging`]).
    pub fn with_replica(mut self, replica: PgPool, routing: Routing) -> Self {
        let shared = Shared {
            in_process_limiter: self.in_process_limiter.clone(),
            metrics: self.metrics.clone(),
            announcer: self.announcer.clone(),
        };
        let reads = Self::assemble(replica, self.clock.clone(), self.settings.clone(), shared);
        self.replica = Some(ReplicaReads {
            state: Arc::new(reads),
            routing,
        });
        self
    }

    /// The services a read by `caller` that tolerates lag runs on now: the replica's when it is
    /// recent enough for the caller, else these. For a read of several queries that must all
    /// come from one side (a streamed CSV); [`crate::read_lagging`] also falls back to the
    /// primary.
    pub fn serving(state: &web::Data<Self>, caller: &Principal, after: ReadAfter) -> Arc<Self> {
        match &state.replica {
            Some(replica) if replica.routing.serves(caller, after.0) => replica.state.clone(),
            _ => state.clone().into_inner(),
        }
    }

    /// The replica's services for a read by `caller` that the primary could not answer, when
    /// the replica answers and has the caller's writes.
    pub fn replica_without_primary(
        &self,
        caller: &Principal,
        after: ReadAfter,
    ) -> Option<&AppState> {
        self.replica
            .as_ref()
            .filter(|replica| replica.routing.serves_without_primary(caller, after.0))
            .map(|replica| &*replica.state)
    }

    /// The replica's admission, for a read the primary's could not decide.
    pub(crate) fn replica_admission(&self) -> Option<&Admission> {
        self.replica
            .as_ref()
            .map(|replica| &replica.state.admission)
    }

    /// What admits a request: this state's admission, or for a read while the primary does not
    /// answer, the replica's (which finds keys on the replica), so that reads that may use the
    /// replica keep answering.
    pub(crate) fn admission_for(&self, access: Access) -> &Admission {
        match &self.replica {
            Some(replica) if access == Access::Read && !replica.routing.primary_answers() => {
                &replica.state.admission
            }
            _ => &self.admission,
        }
    }

    /// The routing of reads and the primary's pool, when a replica serves reads.
    pub(crate) fn replica_routing(&self) -> Option<(Routing, PgPool)> {
        self.replica
            .as_ref()
            .map(|replica| (replica.routing.clone(), self.pool.clone()))
    }

    /// The replica's services, when the replica is recent enough for `caller`'s read that
    /// tolerates lag (and has `after`, a position the caller sent). See [`crate::read_lagging`],
    /// which falls back to the primary's when the replica cannot answer.
    pub fn replica_for(&self, caller: &Principal, after: ReadAfter) -> Option<&AppState> {
        self.replica
            .as_ref()
            .filter(|replica| replica.routing.serves(caller, after.0))
            .map(|replica| &*replica.state)
    }

    fn assemble(
        pool: PgPool,
        clock: Arc<dyn Clock>,
        settings: StateSettings,
        shared: Shared,
    ) -> Self {
        let workspaces = Arc::new(PgWorkspaceRepository::new(pool.clone()));
        let users = Arc::new(PgUserRepository::new(pool.clone()));
        let keys = Arc::new(PgApiKeyRepository::new(pool.clone()));
        let ids = Arc::new(UuidV7Ids);
        let Shared {
            in_process_limiter,
            metrics,
            announcer,
        } = shared;
        let catalog = Arc::new(PgCatalogRepository::new(pool.clone(), announcer.clone()));
        // The font is part of the binary (and checked by the adapter's tests): it always loads.
        let invoice_pdf: Arc<dyn InvoicePdf> =
            Arc::new(KrillaInvoicePdf::new().expect("the embedded invoice font loads"));
        let mut client_repository: Arc<dyn ClientRepository> =
            Arc::new(PgClientRepository::new(pool.clone(), announcer.clone()));
        if let Some(slots) = settings.search_concurrency {
            // A slot is waited for no longer than a pooled connection.
            let wait = pool
                .timeouts()
                .wait
                .unwrap_or(std::time::Duration::from_secs(2));
            client_repository = Arc::new(SlottedSearches::new(
                client_repository,
                SearchSlots::new(slots),
                wait,
            ));
        }
        let limiter: Arc<dyn RateLimitStore> = match settings.rate_limit_store {
            RateLimitStoreKind::Memory => in_process_limiter.clone(),
            RateLimitStoreKind::Postgres => Arc::new(PgRateLimitStore::new(pool.clone())),
        };
        Self {
            keys: KeyService::new(keys.clone(), clock.clone(), ids.clone(), Arc::new(OsRandom)),
            admission: Admission::new(
                Arc::new(Authenticator::new(
                    keys,
                    clock.clone(),
                    settings.auth_cache_ttl,
                )),
                limiter,
                clock.clone(),
                AdmissionLimits {
                    per_key: settings.rate_limits.per_key,
                    auth_failures: settings.rate_limits.auth_failures,
                },
            ),
            trusted_proxies: settings.trusted_proxies.clone(),
            accounts: AccountService::new(users.clone(), workspaces.clone()),
            workspace: WorkspaceService::new(workspaces.clone(), users.clone(), clock.clone()),
            reports: ReportService::new(
                Arc::new(PgReportRepository::new(pool.clone())),
                workspaces.clone(),
            ),
            invoices: InvoiceService::new(
                Arc::new(PgInvoiceRepository::new(pool.clone(), announcer.clone())),
                invoice_pdf.clone(),
                client_repository.clone(),
                workspaces.clone(),
                clock.clone(),
                ids.clone(),
            ),
            rates: RateService::new(
                Arc::new(PgRateRepository::new(pool.clone())),
                workspaces.clone(),
                clock.clone(),
                ids.clone(),
            ),
            clients: ClientService::new(
                client_repository.clone(),
                workspaces.clone(),
                clock.clone(),
                ids.clone(),
            ),
            webhooks: WebhookService::new(
                Arc::new(PgSubscriptionRepository::new(
                    pool.clone(),
                    settings.secrets.clone(),
                )),
                Arc::new(PgDeliveryLog::new(pool.clone(), announcer.clone())),
                Arc::new(SystemResolver::default()),
                clock.clone(),
                ids.clone(),
                Arc::new(OsRandom),
                settings.webhooks,
                settings.masks,
            )
            .with_local_receivers(settings.local_receivers.clone()),
            feed: FeedService::new(
                Arc::new(PgEventFeed::new(pool.clone())),
                clock.clone(),
                settings
                    .webhooks
                    .event_retention
                    .max(settings.webhooks.retention),
                settings.masks,
            ),
            catalog: CatalogService::new(
                catalog.clone(),
                client_repository,
                workspaces.clone(),
                clock.clone(),
                ids.clone(),
            ),
            entries: TimeEntryService::new(
                Arc::new(PgTimeEntryRepository::new(pool.clone(), announcer.clone())),
                catalog,
                workspaces,
                users,
                clock.clone(),
                ids,
            ),
            in_process_limiter,
            idempotency: Arc::new(PgIdempotencyStore::new(
                pool.clone(),
                settings.secrets.clone(),
            )),
            health: Arc::new(PgHealthProbe::new(pool.clone(), settings.health_timeout)),
            clock,
            metrics,
            announcer,
            settings,
            pool,
            replica: None,
        }
    }
}
