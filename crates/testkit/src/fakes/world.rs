//! A complete in-memory world: the fakes of every port and the services built on them.

use super::*;

/// A complete in-memory world: fakes of every port and the services built on them.
#[derive(Debug)]
pub struct TestWorld {
    /// The store behind every repository port.
    pub store: Arc<InMemoryStore>,
    /// The clock, at 2026-01-05T09:00:00Z until advanced.
    pub clock: Arc<ManualClock>,
    /// The id generator.
    pub ids: Arc<SequentialIds>,
    /// The admin service on these fakes.
    pub admin: AdminService,
    /// The client service on these fakes.
    pub clients: ClientService,
    /// The resolver behind the webhook service.
    pub resolver: Arc<StaticResolver>,
    /// The webhook service on these fakes (SSRF guard on, cap 100).
    pub webhooks: WebhookService,
    /// The project, task and tag service on these fakes.
    pub catalog: CatalogService,
    /// The time-entry service on these fakes.
    pub entries: TimeEntryService,
}

impl Default for TestWorld {
    fn default() -> Self {
        Self::new()
    }
}

impl TestWorld {
    /// A fresh, empty world.
    pub fn new() -> Self {
        let store = Arc::new(InMemoryStore::default());
        let clock = Arc::new(ManualClock::at(
            time::macros::datetime!(2026-01-05 09:00 UTC),
        ));
        let ids = Arc::new(SequentialIds::default());
        let admin = AdminService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
            Arc::new(SeededRandom::new(42)),
        );
        let clients = ClientService::new(store.clone(), store.clone(), clock.clone(), ids.clone());
        let resolver = Arc::new(StaticResolver::default());
        let webhooks = WebhookService::new(
            store.clone(),
            store.clone(),
            resolver.clone(),
            clock.clone(),
            ids.clone(),
            Arc::new(SeededRandom::new(77)),
            WebhookSettings::default(),
            Masks::new(&[5; 32]),
        );
        let catalog = CatalogService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
        );
        let entries = TimeEntryService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
        );
        Self {
            store,
            clock,
            ids,
            admin,
            clients,
            resolver,
            webhooks,
            catalog,
            entries,
        }
    }

    /// A workspace `Acme` with one member, `Ada`, its owner.
    pub fn workspace_with_user(&self) -> (Workspace, User) {
        let ws = run_ready(
            self.admin
                .create_workspace(NewWorkspace::named(name("Acme"))),
        )
        .expect("create workspace");
        let user = run_ready(
            self.admin
                .create_user(ws.id, name("Ada"), email("ada@example.com")),
        )
        .expect("create user");
        (ws, user)
    }
}

/// `value` parsed as a [`Name`]; panics if it is not one (a test's own literal).
pub fn name(value: &str) -> Name {
    Name::parse("name", value).expect("a valid name")
}

/// `value` parsed as an [`Email`]; panics if it is not one (a test's own literal).
pub fn email(value: &str) -> Email {
    Email::parse(value).expect("a valid e-mail address")
}

/// Runs a future built on the in-memory fakes to completion.
///
/// The fakes never wait on anything, so such a future is ready on its first polls; a future that
/// waits on real I/O must not be given to this function.
pub fn run_ready<F: Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}
