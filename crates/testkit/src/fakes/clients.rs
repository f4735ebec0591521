//! Clients and the client search.

use super::*;

#[async_trait]
impl ClientRepository for InMemoryStore {
    async fn create(&self, client: &Client, events: &[Event]) -> DomainResult<()> {
        let mut t = self.tables();
        let key = Client::name_key(&client.name);
        if let Some(existing) = t
            .clients
            .iter()
            .find(|c| c.workspace_id == client.workspace_id && Client::name_key(&c.name) == key)
        {
            return Err(DomainError::AlreadyExists {
                what: "client",
                id: existing.id.to_string(),
            });
        }
        t.clients.push(client.clone());
        t.record(events);
        Ok(())
    }

    async fn get(&self, workspace: WorkspaceId, id: ClientId) -> DomainResult<Option<Client>> {
        Ok(self
            .tables()
            .clients
            .iter()
            .find(|c| c.workspace_id == workspace && c.id == id)
            .cloned())
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Client>> {
        let mut clients: Vec<Client> = self
            .tables()
            .clients
            .iter()
            .filter(|c| c.workspace_id == workspace)
            .filter(|c| filter.admits(&c.name, c.updated_at))
            .filter(|c| {
                page.after
                    .is_none_or(|after| (c.created_at, c.id.0) < (after.created_at, after.id))
            })
            .cloned()
            .collect();
        newest_first(&mut clients);
        clients.truncate(page.limit as usize + 1);
        Ok(Page::from_overfetch(clients, page.limit, client_position))
    }

    async fn search(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Client>> {
        let mut found: Vec<Client> = self
            .tables()
            .clients
            .iter()
            .filter(|c| c.workspace_id == workspace && Client::name_key(&c.name).contains(needle))
            .cloned()
            .collect();
        newest_first(&mut found);
        found.truncate(limit as usize);
        Ok(found)
    }

    async fn newest(&self, workspace: WorkspaceId) -> DomainResult<Option<Client>> {
        Ok(self.search(workspace, "", 1).await?.pop())
    }

    async fn update(
        &self,
        before: &Client,
        after: &Client,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        let key = Client::name_key(&after.name);
        if let Some(other) = t.clients.iter().find(|c| {
            c.workspace_id == after.workspace_id
                && c.id != after.id
                && Client::name_key(&c.name) == key
        }) {
            return Err(DomainError::AlreadyExists {
                what: "client",
                id: other.id.to_string(),
            });
        }
        let Some(stored) = t.clients.iter_mut().find(|c| {
            c.id == before.id
                && c.workspace_id == before.workspace_id
                && c.updated_at == before.updated_at
        }) else {
            return Ok(WriteOutcome::Raced);
        };
        *stored = after.clone();
        if before.currency != after.currency {
            let client = after.id;
            t.reprice(after.workspace_id, |t, e| {
                e.project_id.is_some_and(|p| {
                    t.projects
                        .iter()
                        .any(|project| project.id == p && project.client_id == Some(client))
                })
            });
        }
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn delete(&self, client: &Client, events: &[Event]) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        if t.projects
            .iter()
            .any(|p| p.workspace_id == client.workspace_id && p.client_id == Some(client.id))
        {
            return Err(DomainError::Conflict("Client is used by projects".into()));
        }
        let before = t.clients.len();
        t.clients.retain(|c| {
            !(c.workspace_id == client.workspace_id
                && c.id == client.id
                && c.updated_at == client.updated_at)
        });
        if t.clients.len() == before {
            return Ok(WriteOutcome::Raced);
        }
        t.record(events);
        Ok(WriteOutcome::Applied)
    }
}
