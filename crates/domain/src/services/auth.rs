//! Authentication of API keys, with a short-lived cache of verified keys.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use time::{Duration, OffsetDateTime};

use crate::error::{DomainError, DomainResult};
use crate::model::{ApiKeySecret, KeyHash, Principal};
use crate::ports::{ApiKeyRepository, Clock};

/// How often `last_used_at` is written for one key, at most.
const LAST_USED_EVERY: Duration = Duration::minutes(1);
/// Verified keys kept in the cache before it is cleared.
const MAX_CACHED_KEYS: usize = 10_000;

#[derive(Clone)]
struct Cached {
    principal: Principal,
    verified_at: OffsetDateTime,
    last_used_at: Option<OffsetDateTime>,
}

/// Turns a presented bearer key into a [`Principal`].
///
/// A verified key is remembered for `ttl` (at most 30 s by the product's rules), so a revoked key
/// stops working within `ttl` in every process, and at once in a process that has not seen it.
pub struct Authenticator {
    keys: Arc<dyn ApiKeyRepository>,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    cache: Mutex<HashMap<KeyHash, Cached>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// The longest a verified key may be trusted without asking storage again.
    pub const MAX_TTL: Duration = Duration::seconds(30);

    /// Builds an authenticator whose cache keeps verified keys for `ttl` (clamped to 30 s).
    pub fn new(keys: Arc<dyn ApiKeyRepository>, clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        Self {
            keys,
            clock,
            ttl: ttl.clamp(Duration::ZERO, Self::MAX_TTL),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The principal of `presented`.
    ///
    /// Returns `Unauthorized` for a key that is malformed, unknown or revoked, and `Unavailable`
    /// when storage cannot be reached.
    pub async fn authenticate(&self, presented: &str) -> DomainResult<Principal> {
        let secret = ApiKeySecret::parse(presented).ok_or(DomainError::Unauthorized)?;
        let hash = secret.hash();
        let now = self.clock.now();

        let mut entry = match self.cached(&hash, now) {
            Some(hit) => hit,
            None => {
                let key = self
                    .keys
                    .find_active_by_hash(&hash)
                    .await?
                    .ok_or(DomainError::Unauthorized)?;
                Cached {
                    principal: key.principal(),
                    verified_at: now,
                    last_used_at: key.last_used_at,
                }
            }
        };

        if entry
            .last_used_at
            .is_none_or(|at| now - at >= LAST_USED_EVERY)
        {
            // Best effort: a failed bookkeeping write must not refuse a valid key.
            if self
                .keys
                .record_use(entry.principal.api_key_id, now)
                .await
                .is_ok()
            {
                entry.last_used_at = Some(now);
            }
        }
        let principal = entry.principal;
        self.remember(hash, entry);
        Ok(principal)
    }

    /// Whether `presented` was verified within the cache's lifetime, so that
    /// [`Authenticator::authenticate`] would not ask storage about it.
    pub(crate) fn is_verified(&self, presented: &str) -> bool {
        ApiKeySecret::parse(presented)
            .is_some_and(|secret| self.cached(&secret.hash(), self.clock.now()).is_some())
    }

    fn cached(&self, hash: &KeyHash, now: OffsetDateTime) -> Option<Cached> {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .get(hash)
            .filter(|c| now - c.verified_at < self.ttl)
            .cloned()
    }

    fn remember(&self, hash: KeyHash, entry: Cached) {
        if self.ttl.is_zero() {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED_KEYS && !cache.contains_key(&hash) {
            cache.clear();
        }
        cache.insert(hash, entry);
    }
}
