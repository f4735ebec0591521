//! Clients: creation (with its `CLIENT_CREATED` event), reading, search, changes and deletion.

use std::sync::Arc;

use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, EventId, WorkspaceId};
use crate::model::client::{MAX_ADDRESS_CHARS, MAX_NOTE_CHARS, MAX_PHONE_CHARS, optional_text};
use crate::model::{
    Client, ClientDraft, ClientPatch, ClientStatus, ClientType, Event, EventType, Page,
    PageRequest, Principal, Workspace,
};
use crate::payload;
use crate::ports::{ClientRepository, Clock, IdGenerator, WorkspaceRepository};
use crate::validate;

/// Most results of a client search.
pub const MAX_SEARCH_RESULTS: u32 = 100;

/// Client operations, always inside the caller's workspace.
#[derive(Clone)]
pub struct ClientService {
    clients: Arc<dyn ClientRepository>,
    workspaces: Arc<dyn WorkspaceRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl std::fmt::Debug for ClientService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientService").finish_non_exhaustive()
    }
}

impl ClientService {
    /// Builds the service on its ports.
    pub fn new(
        clients: Arc<dyn ClientRepository>,
        workspaces: Arc<dyn WorkspaceRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            clients,
            workspaces,
            clock,
            ids,
        }
    }

    async fn workspace(&self, id: WorkspaceId) -> DomainResult<Workspace> {
        self.workspaces
            .get(id)
            .await?
            .ok_or(DomainError::NotFound("workspace"))
    }

    /// Creates a client in the caller's workspace and records `CLIENT_CREATED` with it.
    pub async fn create(&self, caller: &Principal, draft: ClientDraft) -> DomainResult<Client> {
        let workspace = self.workspace(caller.workspace_id).await?;
        let now = self.clock.now();
        let client = Client {
            id: ClientId(self.ids.new_uuid()),
            workspace_id: workspace.id,
            name: validate::name("name", &draft.name)?,
            client_type: draft.client_type.unwrap_or(ClientType::Company),
            status: draft.status.unwrap_or(ClientStatus::Active),
            email: draft
                .email
                .as_deref()
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(validate::email)
                .transpose()?,
            phone: optional_text("phone", draft.phone.as_deref(), MAX_PHONE_CHARS)?,
            address: optional_text("address", draft.address.as_deref(), MAX_ADDRESS_CHARS)?,
            note: optional_text("note", draft.note.as_deref(), MAX_NOTE_CHARS)?,
            currency: validate::currency(draft.currency.as_deref().unwrap_or(&workspace.currency))?,
            created_at: now,
            updated_at: now,
        };
        let event = Event {
            id: EventId(self.ids.new_uuid()),
            workspace_id: workspace.id,
            event_type: EventType::ClientCreated,
            body: payload::to_body(&payload::client_created(&client, &workspace))?,
            created_at: now,
        };
        self.clients.create(&client, &[event]).await?;
        Ok(client)
    }

    /// The caller's client `id`; `NotFound("client")` for anything else.
    pub async fn get(&self, caller: &Principal, id: ClientId) -> DomainResult<Client> {
        self.clients
            .get(caller.workspace_id, id)
            .await?
            .ok_or(DomainError::NotFound("client"))
    }

    /// A page of the caller's clients, newest first.
    pub async fn list(&self, caller: &Principal, page: PageRequest) -> DomainResult<Page<Client>> {
        self.clients.list(caller.workspace_id, page).await
    }

    /// Applies `patch` to the caller's client `id`.
    pub async fn update(
        &self,
        caller: &Principal,
        id: ClientId,
        patch: &ClientPatch,
    ) -> DomainResult<Client> {
        let mut client = self.get(caller, id).await?;
        patch.apply(&mut client)?;
        client.updated_at = self.clock.now();
        self.clients.update(&client).await?;
        Ok(client)
    }

    /// Deletes the caller's client `id`; refused while a project uses it.
    pub async fn delete(&self, caller: &Principal, id: ClientId) -> DomainResult<()> {
        self.clients.delete(caller.workspace_id, id).await
    }

    /// Clients of `workspace` whose name contains `name`, ignoring case (Unicode lowercase), newest
    /// first, at most `limit` (1 to 100, default 100).
    ///
    /// `Forbidden` when `workspace` is not the caller's; `Validation` for an empty or over-long
    /// name or an out-of-range limit.
    pub async fn find(
        &self,
        caller: &Principal,
        workspace: WorkspaceId,
        name: &str,
        limit: Option<u32>,
    ) -> DomainResult<Vec<Client>> {
        let chars = name.chars().count();
        if chars == 0 || chars > validate::MAX_NAME_CHARS {
            return Err(DomainError::validation("name must be 1 to 255 characters"));
        }
        let limit = limit.unwrap_or(MAX_SEARCH_RESULTS);
        if !(1..=MAX_SEARCH_RESULTS).contains(&limit) {
            return Err(DomainError::validation("limit must be between 1 and 100"));
        }
        if workspace != caller.workspace_id {
            return Err(DomainError::Forbidden);
        }
        if name.contains('\0') {
            // No stored name can hold NUL, so nothing matches.
            return Ok(Vec::new());
        }
        self.clients
            .search(workspace, &Client::name_key(name), limit)
            .await
    }

    /// The workspace's newest client as the `CLIENT_CREATED` payload, or the fixed sample.
    pub async fn newest_payload(&self, caller: &Principal) -> DomainResult<payload::ClientPayload> {
        match self.clients.newest(caller.workspace_id).await? {
            Some(client) => {
                let workspace = self.workspace(caller.workspace_id).await?;
                Ok(payload::client_created(&client, &workspace))
            }
            None => Ok(payload::samples::client()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use time::Duration;

    use super::*;
    use crate::testing::{TestWorld, run_ready};

    fn setup() -> (TestWorld, Principal) {
        let world = TestWorld::new();
        let (ws, user) = world.workspace_with_user();
        let (key, _) = run_ready(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
        (world, key.principal())
    }

    fn draft(name: &str) -> ClientDraft {
        ClientDraft {
            name: name.into(),
            ..ClientDraft::default()
        }
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
    fn invalid_fields_are_refused_and_nothing_is_recorded() {
        let (world, caller) = setup();
        for bad in [
            draft(""),
            ClientDraft {
                email: Some("nope".into()),
                ..draft("A")
            },
            ClientDraft {
                currency: Some("usd".into()),
                ..draft("A")
            },
            ClientDraft {
                phone: Some("1".repeat(51)),
                ..draft("A")
            },
            ClientDraft {
                note: Some("n".repeat(10_001)),
                ..draft("A")
            },
        ] {
            let err = run_ready(world.clients.create(&caller, bad.clone())).unwrap_err();
            assert!(
                matches!(err, DomainError::Validation(_)),
                "{bad:?}: {err:?}"
            );
        }
        assert!(world.store.events().is_empty());
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
                email: Some("a@x.io".into()),
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
            name: Some("b".into()),
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
            serde_json::to_value(run_ready(world.clients.newest_payload(&caller)).unwrap())
                .unwrap();
        assert_eq!(newest["name"], json!("Second"));
    }
}
