//! Idempotency keys of POST requests.

use super::*;

#[async_trait]
impl IdempotencyStore for InMemoryStore {
    async fn begin(
        &self,
        _workspace: WorkspaceId,
        api_key: ApiKeyId,
        key: &str,
        fingerprint: [u8; 32],
        now: OffsetDateTime,
    ) -> DomainResult<IdempotencyBegin> {
        let mut t = self.tables();
        let slot = (api_key, key.to_owned());
        let forgotten = t.idempotency.get(&slot).is_some_and(|row| {
            row.created_at < now - IDEMPOTENCY_RETENTION
                || (row.response.is_none() && row.created_at < now - STALE_CLAIM)
        });
        if forgotten {
            t.idempotency.remove(&slot);
        }
        Ok(match t.idempotency.get(&slot) {
            None => {
                t.idempotency.insert(
                    slot,
                    IdempotencyRow {
                        fingerprint,
                        response: None,
                        created_at: now,
                    },
                );
                IdempotencyBegin::Started
            }
            Some(row) if row.fingerprint != fingerprint => IdempotencyBegin::Mismatch,
            Some(IdempotencyRow {
                response: Some((status, body)),
                ..
            }) => IdempotencyBegin::Replay {
                status: *status,
                body: body.clone(),
            },
            Some(_) => IdempotencyBegin::InProgress,
        })
    }

    async fn complete(
        &self,
        api_key: ApiKeyId,
        key: &str,
        status: u16,
        body: &str,
    ) -> DomainResult<()> {
        if let Some(row) = self
            .tables()
            .idempotency
            .get_mut(&(api_key, key.to_owned()))
        {
            row.response = Some((status, body.to_owned()));
        }
        Ok(())
    }

    async fn abandon(&self, api_key: ApiKeyId, key: &str) -> DomainResult<()> {
        let mut t = self.tables();
        let slot = (api_key, key.to_owned());
        if t.idempotency
            .get(&slot)
            .is_some_and(|row| row.response.is_none())
        {
            t.idempotency.remove(&slot);
        }
        Ok(())
    }
}
