//! Keys a member makes for themselves through the API (`/api/keys`, `integrations.md` section 4):
//! with scopes and an expiry, so that an assistant or a Zap holds no more than it needs and no
//! longer. The admin CLI stays for the installation's owners ([`crate::accounts::services::AdminService`]).

use std::sync::Arc;

use time::OffsetDateTime;

use crate::accounts::model::{ApiKey, ApiKeySecret, Principal, Scopes};
use crate::accounts::ports::ApiKeyRepository;
use crate::error::{DomainError, DomainResult};
use crate::ids::ApiKeyId;
use crate::system::{Clock, IdGenerator, RandomSource};
use crate::values::Name;

use crate::error::INVALID_PARAMETERS;

/// A key as asked for: `POST /api/keys` `{name, scopes?, expires_at?}`.
#[derive(Debug, Clone, Default)]
pub struct NewKey {
    /// Its label (1 to 255 characters).
    pub name: String,
    /// Scope names; `None` for all of them (see [`KeyService::create`]).
    pub scopes: Option<Vec<String>>,
    /// When it stops working; `None` for never.
    pub expires_at: Option<OffsetDateTime>,
}

/// Keys made, listed and revoked by their owners.
#[derive(Clone)]
pub struct KeyService {
    keys: Arc<dyn ApiKeyRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    random: Arc<dyn RandomSource>,
}

impl std::fmt::Debug for KeyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyService").finish_non_exhaustive()
    }
}

impl KeyService {
    /// The service over `keys`.
    pub fn new(
        keys: Arc<dyn ApiKeyRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        random: Arc<dyn RandomSource>,
    ) -> Self {
        Self {
            keys,
            clock,
            ids,
            random,
        }
    }

    /// A new key for the caller's user in the caller's workspace, shown once.
    ///
    /// Its scopes are the ones named (at least one), or every scope without `scopes`; either way
    /// no more than the calling key holds (a key cannot make a stronger one: `LacksScope` naming
    /// the first it lacks). `expires_at` must be in the future. The rules are checked before
    /// anything is stored.
    pub async fn create(
        &self,
        caller: &Principal,
        new: NewKey,
    ) -> DomainResult<(ApiKey, ApiKeySecret)> {
        let name = Name::parse("name", &new.name)?.into_string();
        let scopes = match &new.scopes {
            None => Scopes::ALL,
            Some(names) => {
                let scopes =
                    Scopes::parse(names.iter().map(String::as_str)).map_err(|unknown| {
                        DomainError::invalid(
                            INVALID_PARAMETERS,
                            format!(
                                "unknown scope {unknown:?}: the scopes are {}",
                                Scopes::ALL.names().join(", ")
                            ),
                        )
                    })?;
                if scopes == Scopes::NONE {
                    return Err(DomainError::invalid(
                        INVALID_PARAMETERS,
                        format!(
                            "scopes must name at least one of {}",
                            Scopes::ALL.names().join(", ")
                        ),
                    ));
                }
                scopes
            }
        };
        let now = self.clock.now();
        if new.expires_at.is_some_and(|at| at <= now) {
            return Err(DomainError::invalid(
                INVALID_PARAMETERS,
                "expires_at must be in the future",
            ));
        }
        if let Some(lacking) = scopes.iter().find(|s| !caller.scopes.has(*s)) {
            return Err(DomainError::LacksScope(lacking.as_str()));
        }
        let secret = ApiKeySecret::generate(self.random.as_ref());
        let key = ApiKey {
            id: ApiKeyId(self.ids.new_uuid()),
            workspace_id: caller.workspace_id,
            user_id: caller.user_id,
            name: Some(name),
            prefix: secret.shown_prefix(),
            created_at: now,
            revoked_at: None,
            last_used_at: None,
            scopes,
            expires_at: new.expires_at,
        };
        self.keys.create(&key, &secret.hash()).await?;
        Ok((key, secret))
    }

    /// The caller's own keys, or for an owner or admin every key of the workspace; newest
    /// first, revoked and expired ones included.
    pub async fn list(&self, caller: &Principal) -> DomainResult<Vec<ApiKey>> {
        let user = (!caller.role.administers()).then_some(caller.user_id);
        self.keys.list(caller.workspace_id, user).await
    }

    /// Revokes key `id`: the caller's own, or as an owner or admin any key of the workspace.
    /// Its webhooks are disabled in the same transaction. Revoking a revoked key answers it as
    /// it is. `NotFound("api key")` for any other id, which is left alone.
    pub async fn revoke(&self, caller: &Principal, id: ApiKeyId) -> DomainResult<ApiKey> {
        let key = self
            .keys
            .get(id)
            .await?
            .filter(|k| k.workspace_id == caller.workspace_id)
            .filter(|k| k.user_id == caller.user_id || caller.role.administers())
            .ok_or(DomainError::NotFound("api key"))?;
        if key.revoked_at.is_some() {
            return Ok(key);
        }
        self.keys.revoke(key.id, self.clock.now()).await
    }

    /// What a housekeeping pass does for expiry: the webhooks of keys expired by now are
    /// disabled, as a revocation disables them. How many were.
    pub async fn disable_webhooks_of_expired(&self) -> DomainResult<u64> {
        self.keys
            .disable_webhooks_of_expired(self.clock.now())
            .await
    }
}
