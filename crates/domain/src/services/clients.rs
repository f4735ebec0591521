//! Clients: creation (with its `CLIENT_CREATED` event), reading, search, changes and deletion.

use std::sync::Arc;

use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, EventId, WorkspaceId};
use crate::model::{
    Client, ClientDraft, ClientPatch, ClientStatus, ClientType, Event, EventSubject, EventType,
    Page, PageRequest, Principal, Workspace,
};
use crate::payload;
use crate::ports::{ClientRepository, Clock, IdGenerator, WorkspaceRepository};
use crate::values::{Currency, Email, MAX_NAME_CHARS, Text};

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

    /// Creates a client in the caller's workspace and records `CLIENT_CREATED` with it. The draft
    /// is parsed already: what can still fail is the workspace, the name's uniqueness and storage.
    pub async fn create(&self, caller: &Principal, draft: ClientDraft) -> DomainResult<Client> {
        let workspace = self.workspace(caller.workspace_id).await?;
        let now = self.clock.now();
        let client = Client {
            id: ClientId(self.ids.new_uuid()),
            workspace_id: workspace.id,
            name: draft.name.into_string(),
            client_type: draft.client_type.unwrap_or(ClientType::Company),
            status: draft.status.unwrap_or(ClientStatus::Active),
            email: draft.email.map(Email::into_string),
            phone: draft.phone.map(Text::into_string),
            address: draft.address.map(Text::into_string),
            note: draft.note.map(Text::into_string),
            currency: draft
                .currency
                .map_or_else(|| workspace.currency.clone(), Currency::into_string),
            created_at: now,
            updated_at: now,
        };
        let event = Event {
            id: EventId(self.ids.new_uuid()),
            workspace_id: workspace.id,
            event_type: EventType::ClientCreated,
            body: payload::to_body(&payload::client_created(&client, &workspace))?,
            created_at: now,
            subject: EventSubject {
                client_id: Some(client.id),
                ..EventSubject::default()
            },
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
        patch.apply(&mut client);
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
        if chars == 0 || chars > MAX_NAME_CHARS {
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
