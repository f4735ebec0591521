//! Clients: creation (with its `CLIENT_CREATED` event), reading, search, changes and deletion.

use std::sync::Arc;

use crate::accounts::model::{Principal, Workspace};
use crate::accounts::ports::WorkspaceRepository;
use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, EventId, WorkspaceId};
use crate::page::{ListFilter, Page, PageRequest};
use crate::payload;
use crate::system::{Clock, IdGenerator};
use crate::tracking::model::{Client, ClientDraft, ClientPatch, ClientStatus, ClientType};
use crate::tracking::ports::ClientRepository;
use crate::values::{Currency, Email, MAX_NAME_CHARS, Text};
use crate::webhooks::model::{Event, EventSubject, EventType};
use crate::writes::WriteOutcome;
use crate::writes::{WRITE_ATTEMPTS, kept_changing};

/// Most results of a client search.
pub const MAX_SEARCH_RESULTS: u32 = 100;

/// The rules of a search by name (the published client search, and the project find that
/// follows it): `name` of 1 to 255 characters and `limit` of 1 to [`MAX_SEARCH_RESULTS`] (the
/// most when absent), else `Validation`; `workspace` the caller's, else `Forbidden`. The limit
/// to search with, or `None` when nothing can match (a name holding NUL, which no stored name
/// can).
pub(crate) fn search_limit(
    caller: &Principal,
    workspace: WorkspaceId,
    name: &str,
    limit: Option<u32>,
) -> DomainResult<Option<u32>> {
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
    Ok((!name.contains('\0')).then_some(limit))
}

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
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
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
        let body = payload::client_created(&client, &workspace);
        let event = self.event(EventType::ClientCreated, &client, &body, now)?;
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

    /// A page of the caller's clients that pass `filter`, newest first.
    pub async fn list(
        &self,
        caller: &Principal,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Client>> {
        self.clients.list(caller.workspace_id, filter, page).await
    }

    /// Applies `patch` to the caller's client `id` and records `CLIENT_UPDATED` with the fields
    /// of the payload that changed. A patch that changes nothing writes nothing; one that changes
    /// only what the payload does not show (`note`, `currency`) is written without an event.
    pub async fn update(
        &self,
        caller: &Principal,
        id: ClientId,
        patch: &ClientPatch,
    ) -> DomainResult<Client> {
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
        let workspace = self.workspace(caller.workspace_id).await?;
        for _ in 0..WRITE_ATTEMPTS {
            let before = self.get(caller, id).await?;
            let mut after = before.clone();
            patch.apply(&mut after);
            if after == before {
                return Ok(before);
            }
            after.updated_at = self.clock.now();
            let mut body = payload::client_created(&after, &workspace);
            let changed =
                payload::changed_fields(&payload::client_created(&before, &workspace), &body)?;
            let events = if changed.is_empty() {
                Vec::new()
            } else {
                body.changed_fields = Some(changed);
                vec![self.event(EventType::ClientUpdated, &after, &body, after.updated_at)?]
            };
            if self.clients.update(&before, &after, &events).await? == WriteOutcome::Applied {
                return Ok(after);
            }
        }
        Err(kept_changing("client"))
    }

    /// Deletes the caller's client `id` and records `CLIENT_DELETED` with the client as it was;
    /// 409 while a project is for it.
    pub async fn delete(&self, caller: &Principal, id: ClientId) -> DomainResult<()> {
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
        let workspace = self.workspace(caller.workspace_id).await?;
        for _ in 0..WRITE_ATTEMPTS {
            let client = self.get(caller, id).await?;
            let body = payload::client_created(&client, &workspace);
            let event = self.event(EventType::ClientDeleted, &client, &body, self.clock.now())?;
            if self.clients.delete(&client, &[event]).await? == WriteOutcome::Applied {
                return Ok(());
            }
        }
        Err(kept_changing("client"))
    }

    fn event(
        &self,
        event_type: EventType,
        client: &Client,
        body: &payload::ClientPayload,
        at: time::OffsetDateTime,
    ) -> DomainResult<Event> {
        crate::webhooks::model::event::event_of(
            EventId(self.ids.new_uuid()),
            client.workspace_id,
            event_type,
            body,
            at,
            EventSubject {
                client_id: Some(client.id),
                ..EventSubject::default()
            },
            client.id,
        )
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
        let Some(limit) = search_limit(caller, workspace, name, limit)? else {
            return Ok(Vec::new());
        };
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
