//! Admission of an authenticated request: who is calling, and whether the limits let it in.
//!
//! Every request that presents itself as authenticated passes here once, first, whatever answers
//! it afterwards (a handler, or a stored idempotent response), so every such request counts
//! against its key's limit.
//!
//! Failed authentications are limited per client address. Past that limit, a key is looked up
//! only if this process verified it recently (the [`Authenticator`]'s cache) or it is among the
//! keys storage holds (a set read again at most once a second, when a key not in it comes): a
//! valid key always passes, whoever shares its address (an automation platform's egress, an
//! office NAT), and a guess is refused without a look-up of its own until the window frees.

use std::sync::Arc;

use crate::accounts::model::Principal;
use crate::accounts::ports::RateLimitStore;
use crate::accounts::services::{Access, Authenticator};
use crate::error::DomainError;
use crate::ratelimit::{RateDecision, RatePolicy};
use crate::system::Clock;

/// The limits admission applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Per API key, on every authenticated request.
    pub per_key: RatePolicy,
    /// Failed authentications per client address.
    pub auth_failures: RatePolicy,
}

/// A request let in.
#[derive(Debug, Clone, Copy)]
pub struct Admitted {
    /// Who is calling.
    pub principal: Principal,
    /// The key's rate-limit state after counting this request (for `X-RateLimit-*`).
    pub decision: RateDecision,
}

/// Why a request was not let in.
#[derive(Debug)]
pub enum Refusal {
    /// No key, or one that is malformed, unknown or revoked.
    Unauthorized,
    /// Over a limit: the key's own (`decision` is then its state), or the address's failures.
    TooManyRequests {
        /// Whole seconds to wait.
        retry_after_secs: u64,
        /// The key's rate-limit state, when the key's limit refused the request.
        decision: Option<RateDecision>,
    },
    /// Storage could not decide (unreachable, or failing).
    Failed(DomainError),
}

impl From<DomainError> for Refusal {
    fn from(err: DomainError) -> Self {
        Self::Failed(err)
    }
}

/// Lets requests in, or says why not.
#[derive(Clone)]
pub struct Admission {
    auth: Arc<Authenticator>,
    limiter: Arc<dyn RateLimitStore>,
    clock: Arc<dyn Clock>,
    limits: AdmissionLimits,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Admission {
    /// Admission with `auth`, counts kept in `limiter`, and `limits`.
    pub fn new(
        auth: Arc<Authenticator>,
        limiter: Arc<dyn RateLimitStore>,
        clock: Arc<dyn Clock>,
        limits: AdmissionLimits,
    ) -> Self {
        Self {
            auth,
            limiter,
            clock,
            limits,
        }
    }

    /// Forgets what this process verified of key `id` (revoked here), so that its next request,
    /// a read too, asks storage and is refused at once.
    pub fn forget_key(&self, id: crate::ids::ApiKeyId) {
        self.auth.forget_key(id);
    }

    /// Admits a request presenting `key` (the bearer token, if any) from `client` (its address),
    /// for `access` (a write always checks the key in storage: see [`Authenticator`]).
    ///
    /// In order: past the address's failure limit, a key neither verified recently nor among the
    /// keys storage holds is refused with `TooManyRequests` before any lookup; a missing, unknown
    /// or revoked key counts as a failure of the address (`Unauthorized`, or `TooManyRequests`
    /// once that passes the limit); a valid key counts against its own limit, and is refused with
    /// `TooManyRequests` past it.
    pub async fn admit(
        &self,
        key: Option<&str>,
        client: &str,
        access: Access,
    ) -> Result<Admitted, Refusal> {
        let now = self.clock.now();
        let failures = format!("auth-failure:{client}");
        let verified = key.is_some_and(|key| self.auth.is_verified(key));
        if !verified {
            let state = self
                .limiter
                .peek(&failures, now, self.limits.auth_failures)
                .await?;
            let known = match key {
                Some(key) if !state.allowed => self.auth.may_be_known(key).await,
                _ => false,
            };
            if !state.allowed && !known {
                // A key that is not among those storage held at the last read may have been made
                // since: the set is read again at most a second later, and then it passes. So a
                // presented key waits a second; no key at all waits for the address's window.
                let retry_after_secs = if key.is_some() {
                    1
                } else {
                    state.retry_after_secs.unwrap_or(1)
                };
                return Err(Refusal::TooManyRequests {
                    retry_after_secs,
                    decision: None,
                });
            }
        }
        let authenticated = match key {
            Some(key) => self.auth.authenticate(key, access).await,
            None => Err(DomainError::Unauthorized),
        };
        // Counted at the moment of the count, not of the request's arrival: a look-up in storage
        // came between, and a count dated before the look-up would leave the window early (a key
        // could then pass its per-second limit by the requests that waited on storage).
        let principal = match authenticated {
            Ok(principal) => principal,
            Err(DomainError::Unauthorized) => {
                let state = self
                    .limiter
                    .hit(&failures, self.clock.now(), self.limits.auth_failures)
                    .await?;
                return Err(match state.retry_after_secs {
                    Some(retry_after_secs) if !state.allowed => Refusal::TooManyRequests {
                        retry_after_secs,
                        decision: None,
                    },
                    _ => Refusal::Unauthorized,
                });
            }
            Err(other) => return Err(Refusal::Failed(other)),
        };
        let decision = self
            .limiter
            .hit(
                &format!("key:{}", principal.api_key_id),
                self.clock.now(),
                self.limits.per_key,
            )
            .await?;
        match decision.retry_after_secs {
            Some(retry_after_secs) if !decision.allowed => Err(Refusal::TooManyRequests {
                retry_after_secs,
                decision: Some(decision),
            }),
            _ => Ok(Admitted {
                principal,
                decision,
            }),
        }
    }
}
