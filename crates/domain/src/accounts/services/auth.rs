//! Authentication of API keys, with a short-lived cache of verified keys.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use time::{Duration, OffsetDateTime};

use crate::accounts::model::{ApiKeySecret, KeyHash, Principal};
use crate::accounts::ports::ApiKeyRepository;
use crate::error::{DomainError, DomainResult};
use crate::system::Clock;

/// How often `last_used_at` is written for one key, at most.
const LAST_USED_EVERY: Duration = Duration::minutes(1);
/// Verified keys kept in the cache before it is cleared.
const MAX_CACHED_KEYS: usize = 10_000;
/// How often the set of keys storage holds is read again, at most (and only when a key that is
/// not in it is presented past an address's failure limit).
const KNOWN_KEYS_EVERY: Duration = Duration::seconds(1);

#[derive(Clone)]
struct Cached {
    principal: Principal,
    verified_at: OffsetDateTime,
    last_used_at: Option<OffsetDateTime>,
    /// When the key expires, if it does: from then on the cache does not answer for it.
    expires_at: Option<OffsetDateTime>,
}

/// What a request may do with the key it presents: read, or write (which must see a revocation
/// at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A read (`GET`, `HEAD`): the cache's answer will do.
    Read,
    /// Anything else: the key is looked up in storage, whatever the cache says.
    Write,
}

/// The hashes of the keys storage holds, as last read.
#[derive(Default)]
struct Known {
    hashes: HashSet<KeyHash>,
    read_at: Option<OffsetDateTime>,
}

/// Turns a presented bearer key into a [`Principal`].
///
/// A verified key is remembered for `ttl` (at most 30 s by the product's rules) for reads: a
/// revoked key stops reading within `ttl` in every process, and at once in a process that has not
/// seen it. A write always looks the key up in storage ([`Access::Write`]), so once a revocation
/// has committed no write by that key passes in any process (and the key leaves this process's
/// cache then).
pub struct Authenticator {
    keys: Arc<dyn ApiKeyRepository>,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    cache: Mutex<HashMap<KeyHash, Cached>>,
    known: Mutex<Known>,
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
            known: Mutex::new(Known::default()),
        }
    }

    /// The principal of `presented`.
    ///
    /// Returns `Unauthorized` for a key that is malformed, unknown, revoked or expired, and `Unavailable`
    /// when storage cannot be reached.
    /// A write ([`Access::Write`]) asks storage whatever the cache holds, and a key it finds
    /// revoked leaves the cache.
    pub async fn authenticate(&self, presented: &str, access: Access) -> DomainResult<Principal> {
        let secret = ApiKeySecret::parse(presented).ok_or(DomainError::Unauthorized)?;
        let hash = secret.hash();
        let now = self.clock.now();

        let cached = self.cached(&hash, now);
        let mut entry = match (cached, access) {
            (Some(hit), Access::Read) => hit,
            (cached, _) => {
                let found = self.keys.find_active_by_hash(&hash).await?;
                // An expired key is refused as a revoked one is.
                let Some((key, role)) = found.filter(|(key, _)| !key.expired_at(now)) else {
                    self.forget(&hash);
                    return Err(DomainError::Unauthorized);
                };
                Cached {
                    principal: key.principal(role),
                    verified_at: now,
                    last_used_at: cached.and_then(|c| c.last_used_at).or(key.last_used_at),
                    expires_at: key.expires_at,
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

    /// Whether `presented` may be a key storage holds: it is among the keys storage held when last
    /// read, which is read again (at most once per [`KNOWN_KEYS_EVERY`]) when it is not. Past an
    /// address's failure limit, only such a key is looked up: a valid key always passes, and a
    /// guess costs no look-up of its own. Storage that cannot be read leaves the set as it was.
    pub(crate) async fn may_be_known(&self, presented: &str) -> bool {
        let Some(secret) = ApiKeySecret::parse(presented) else {
            return false;
        };
        let hash = secret.hash();
        let now = self.clock.now();
        {
            let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
            if known.hashes.contains(&hash) {
                return true;
            }
            if known.read_at.is_some_and(|at| now - at < KNOWN_KEYS_EVERY) {
                return false;
            }
            // One reader at a time: the others keep the set as it is meanwhile.
            known.read_at = Some(now);
        }
        let Ok(hashes) = self.keys.active_hashes().await else {
            return false;
        };
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        known.hashes = hashes.into_iter().collect();
        known.hashes.contains(&hash)
    }

    /// Forgets the cached verification of key `id` (revoked in this process): its next read
    /// asks storage.
    pub fn forget_key(&self, id: crate::ids::ApiKeyId) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, cached| cached.principal.api_key_id != id);
    }

    fn forget(&self, hash: &KeyHash) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(hash);
    }

    fn cached(&self, hash: &KeyHash, now: OffsetDateTime) -> Option<Cached> {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .get(hash)
            .filter(|c| now - c.verified_at < self.ttl)
            .filter(|c| c.expires_at.is_none_or(|at| at > now))
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
