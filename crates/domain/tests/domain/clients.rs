use serde_json::{Value, json};
use time::Duration;
use timetrack_domain::model::Role;

use timetrack_domain::model::client::{MAX_NOTE_CHARS, MAX_PHONE_CHARS};
use timetrack_domain::values::{Currency, Email, Name, Text};
use timetrack_domain::{DomainError, ids::*, model::*, payload};
use timetrack_testkit::fakes::{TestWorld, email, name, run_ready};

fn setup() -> (TestWorld, Principal) {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let (key, _) = run_ready(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
    (world, key.principal(Role::Owner))
}

fn draft(value: &str) -> ClientDraft {
    ClientDraft::named(name(value))
}

#[test]
fn create_applies_defaults_and_records_exactly_one_client_created_event() {
    let (world, caller) = setup();
    let client = run_ready(world.clients.create(&caller, draft(" Globex "))).unwrap();
    assert_eq!(client.name, "Globex");
    assert_eq!(client.client_type, ClientType::Company);
    assert_eq!(client.status, ClientStatus::Active);
    assert_eq!(client.currency, "USD");
    assert_eq!(client.email, None);

    let events = world.store.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_type, EventType::ClientCreated);
    assert_eq!(events[0].workspace_id, caller.workspace_id);
    let body: Value = serde_json::from_str(&events[0].body).unwrap();
    assert_eq!(body["id"], client.id.to_string());
    assert_eq!(body["name"], "Globex");
    assert_eq!(body["workspace"]["name"], "Acme");
    assert_eq!(body["email"], Value::Null);
}

#[test]
fn invalid_fields_cannot_become_a_draft() {
    // A `ClientDraft` holds parsed values: the invalid ones stop at parsing, with these messages.
    let refused = [
        Name::parse("name", "").map(|_| ()),
        Email::parse("nope").map(|_| ()),
        Currency::parse("usd").map(|_| ()),
        Text::parse_optional("phone", Some(&"1".repeat(51)), MAX_PHONE_CHARS).map(|_| ()),
        Text::parse_optional("note", Some(&"n".repeat(10_001)), MAX_NOTE_CHARS).map(|_| ()),
    ];
    let messages: Vec<String> = refused
        .into_iter()
        .map(|r| r.unwrap_err().to_string())
        .collect();
    assert_eq!(
        messages,
        [
            "name must not be empty",
            "invalid e-mail address: nope",
            "currency must be an ISO 4217 code, got: usd",
            "phone must be at most 50 characters",
            "note must be at most 10000 characters",
        ]
    );
}

#[test]
fn a_duplicate_name_in_any_case_names_the_existing_client() {
    let (world, caller) = setup();
    let first = run_ready(world.clients.create(&caller, draft("Émile SARL"))).unwrap();
    let err = run_ready(world.clients.create(&caller, draft("émile sarl"))).unwrap_err();
    match err {
        DomainError::AlreadyExists { what, id } => {
            assert_eq!((what, id), ("client", first.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(world.store.events().len(), 1);
}

#[test]
fn find_is_case_insensitive_literal_newest_first_and_bounded() {
    let (world, caller) = setup();
    for name in ["Acme Ltd", "ACME 100%", "acme_x", "Other", "Ацме"] {
        run_ready(world.clients.create(&caller, draft(name))).unwrap();
        world.clock.advance(Duration::seconds(1));
    }
    let names = |needle: &str, limit| -> Vec<String> {
        run_ready(
            world
                .clients
                .find(&caller, caller.workspace_id, needle, limit),
        )
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect()
    };
    assert_eq!(names("acme", None), ["acme_x", "ACME 100%", "Acme Ltd"]);
    assert_eq!(names("%", None), ["ACME 100%"]);
    assert_eq!(names("_", None), ["acme_x"]);
    assert_eq!(names("АЦМЕ", None), ["Ацме"]);
    assert_eq!(names("acme", Some(1)), ["acme_x"]);
    assert!(names("zzz", None).is_empty());
}

#[test]
fn find_in_another_workspace_is_forbidden_and_bad_input_is_validation() {
    let (world, caller) = setup();
    let other = WorkspaceId(uuid::Uuid::from_u128(999));
    assert!(matches!(
        run_ready(world.clients.find(&caller, other, "a", None)),
        Err(DomainError::Forbidden)
    ));
    for (name, limit) in [
        ("", None),
        (&*"a".repeat(256), None),
        ("a", Some(0)),
        ("a", Some(101)),
    ] {
        assert!(matches!(
            run_ready(
                world
                    .clients
                    .find(&caller, caller.workspace_id, name, limit)
            ),
            Err(DomainError::Validation(_))
        ));
    }
}

#[test]
fn update_validates_clears_and_keeps_names_unique() {
    let (world, caller) = setup();
    let a = run_ready(world.clients.create(
        &caller,
        ClientDraft {
            email: Some(email("a@x.io")),
            ..draft("A")
        },
    ))
    .unwrap();
    run_ready(world.clients.create(&caller, draft("B"))).unwrap();
    world.clock.advance(Duration::seconds(5));
    let patch = ClientPatch {
        email: Some(None),
        status: Some(ClientStatus::Inactive),
        ..ClientPatch::default()
    };
    let updated = run_ready(world.clients.update(&caller, a.id, &patch)).unwrap();
    assert_eq!(updated.email, None);
    assert_eq!(updated.status, ClientStatus::Inactive);
    assert_eq!(updated.updated_at, a.created_at + Duration::seconds(5));
    let clash = ClientPatch {
        name: Some(name("b")),
        ..ClientPatch::default()
    };
    assert!(matches!(
        run_ready(world.clients.update(&caller, a.id, &clash)),
        Err(DomainError::AlreadyExists { .. })
    ));
}

#[test]
fn the_client_fallback_is_the_newest_client_or_the_sample() {
    let (world, caller) = setup();
    let sample = run_ready(world.clients.newest_payload(&caller)).unwrap();
    assert_eq!(sample, payload::samples::client());
    run_ready(world.clients.create(&caller, draft("First"))).unwrap();
    world.clock.advance(Duration::seconds(1));
    run_ready(world.clients.create(&caller, draft("Second"))).unwrap();
    let newest =
        serde_json::to_value(run_ready(world.clients.newest_payload(&caller)).unwrap()).unwrap();
    assert_eq!(newest["name"], json!("Second"));
}

/// A client store whose rows always change under the writer: every conditional write is `Raced`.
struct AlwaysRaced {
    inner: std::sync::Arc<timetrack_testkit::fakes::InMemoryStore>,
    writes: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl timetrack_domain::ports::ClientRepository for AlwaysRaced {
    async fn create(
        &self,
        client: &Client,
        events: &[Event],
    ) -> timetrack_domain::DomainResult<()> {
        self.inner.create(client, events).await
    }
    async fn get(
        &self,
        workspace: WorkspaceId,
        id: ClientId,
    ) -> timetrack_domain::DomainResult<Option<Client>> {
        timetrack_domain::ports::ClientRepository::get(&*self.inner, workspace, id).await
    }
    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> timetrack_domain::DomainResult<Page<Client>> {
        timetrack_domain::ports::ClientRepository::list(&*self.inner, workspace, filter, page).await
    }
    async fn search(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> timetrack_domain::DomainResult<Vec<Client>> {
        self.inner.search(workspace, needle, limit).await
    }
    async fn newest(
        &self,
        workspace: WorkspaceId,
    ) -> timetrack_domain::DomainResult<Option<Client>> {
        self.inner.newest(workspace).await
    }
    async fn update(
        &self,
        _before: &Client,
        _after: &Client,
        _events: &[Event],
    ) -> timetrack_domain::DomainResult<timetrack_domain::ports::WriteOutcome> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(timetrack_domain::ports::WriteOutcome::Raced)
    }
    async fn delete(
        &self,
        _client: &Client,
        _events: &[Event],
    ) -> timetrack_domain::DomainResult<timetrack_domain::ports::WriteOutcome> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(timetrack_domain::ports::WriteOutcome::Raced)
    }
}

#[test]
fn a_change_that_loses_every_race_is_409_after_five_tries_and_records_nothing() {
    let (world, caller) = setup();
    let client = run_ready(world.clients.create(&caller, draft("Globex"))).unwrap();
    let raced = std::sync::Arc::new(AlwaysRaced {
        inner: world.store.clone(),
        writes: std::sync::atomic::AtomicUsize::new(0),
    });
    let service = timetrack_domain::services::ClientService::new(
        raced.clone(),
        world.store.clone(),
        world.clock.clone(),
        world.ids.clone(),
    );
    let patch = ClientPatch {
        name: Some(name("Globex Corporation")),
        ..ClientPatch::default()
    };
    let err = run_ready(service.update(&caller, client.id, &patch)).unwrap_err();
    assert_eq!(err.to_string(), "The client kept changing; try again");
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");
    let err = run_ready(service.delete(&caller, client.id)).unwrap_err();
    assert_eq!(err.to_string(), "The client kept changing; try again");
    assert_eq!(raced.writes.load(std::sync::atomic::Ordering::SeqCst), 10);
    // Only the creation's event: the lost writes recorded none.
    assert_eq!(world.store.events().len(), 1);
}
