//! Sealing again, under the current key, every stored secret that is not: values from before
//! encryption at rest, and values sealed under a previous key after a rotation.

use anyhow::{Context, Result};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use uuid::Uuid;

use super::pool::PgPool;
use super::schema::{idempotency_keys, webhook_subscriptions};
use crate::secrets::{Purpose, SecretBox};

/// What [`reseal_all`] rewrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resealed {
    /// Webhook signing secrets (current and, inside a rotation's window, previous).
    pub webhook_secrets: usize,
    /// Webhooks' custom headers.
    pub webhook_headers: usize,
    /// Stored idempotent responses.
    pub idempotent_responses: usize,
}

/// Seals every webhook secret, webhook's custom headers and stored idempotent response that is not under `secrets`'
/// current key again under it.
///
/// Fails, naming the key, if a value is sealed under a key `secrets` does not have: after a
/// rotation, the old key must stay listed as previous until this has run. Each row is rewritten
/// only if it still holds the value read, so processes running this at once do no harm.
pub async fn reseal_all(pool: &PgPool, secrets: &SecretBox) -> Result<Resealed> {
    let mut conn = pool.get().await.context("connecting to reseal secrets")?;
    let pattern = secrets.current_pattern();
    let mut resealed = Resealed::default();

    let stale: Vec<(String, String)> = webhook_subscriptions::table
        .filter(webhook_subscriptions::secret.not_like(&pattern))
        .select((webhook_subscriptions::id, webhook_subscriptions::secret))
        .load(&mut conn)
        .await
        .context("reading webhook secrets to reseal")?;
    for (id, stored) in stale {
        let plain = secrets
            .open(Purpose::WebhookSecret, &stored)
            .with_context(|| format!("webhook {id}"))?;
        resealed.webhook_secrets += diesel::update(
            webhook_subscriptions::table
                .filter(webhook_subscriptions::id.eq(&id))
                .filter(webhook_subscriptions::secret.eq(&stored)),
        )
        .set(webhook_subscriptions::secret.eq(secrets.seal(Purpose::WebhookSecret, &plain)))
        .execute(&mut conn)
        .await
        .context("resealing a webhook secret")?;
    }

    // The secrets a rotation keeps signing for a while.
    let stale: Vec<(String, String)> = webhook_subscriptions::table
        .filter(webhook_subscriptions::previous_secret.is_not_null())
        .filter(
            webhook_subscriptions::previous_secret
                .assume_not_null()
                .not_like(&pattern),
        )
        .select((
            webhook_subscriptions::id,
            webhook_subscriptions::previous_secret.assume_not_null(),
        ))
        .load(&mut conn)
        .await
        .context("reading previous webhook secrets to reseal")?;
    for (id, stored) in stale {
        let plain = secrets
            .open(Purpose::WebhookSecret, &stored)
            .with_context(|| format!("webhook {id} (previous secret)"))?;
        resealed.webhook_secrets += diesel::update(
            webhook_subscriptions::table
                .filter(webhook_subscriptions::id.eq(&id))
                .filter(webhook_subscriptions::previous_secret.eq(&stored)),
        )
        .set(
            webhook_subscriptions::previous_secret.eq(secrets.seal(Purpose::WebhookSecret, &plain)),
        )
        .execute(&mut conn)
        .await
        .context("resealing a previous webhook secret")?;
    }

    let stale: Vec<(String, String)> = webhook_subscriptions::table
        .filter(webhook_subscriptions::headers.is_not_null())
        .filter(
            webhook_subscriptions::headers
                .assume_not_null()
                .not_like(&pattern),
        )
        .select((
            webhook_subscriptions::id,
            webhook_subscriptions::headers.assume_not_null(),
        ))
        .load(&mut conn)
        .await
        .context("reading webhooks' custom headers to reseal")?;
    for (id, stored) in stale {
        let plain = secrets
            .open(Purpose::WebhookHeaders, &stored)
            .with_context(|| format!("webhook {id} (custom headers)"))?;
        resealed.webhook_headers += diesel::update(
            webhook_subscriptions::table
                .filter(webhook_subscriptions::id.eq(&id))
                .filter(webhook_subscriptions::headers.eq(&stored)),
        )
        .set(webhook_subscriptions::headers.eq(secrets.seal(Purpose::WebhookHeaders, &plain)))
        .execute(&mut conn)
        .await
        .context("resealing a webhook's custom headers")?;
    }

    let stale: Vec<(Uuid, String, String)> = idempotency_keys::table
        .filter(idempotency_keys::body.is_not_null())
        .filter(idempotency_keys::body.not_like(&pattern))
        .select((
            idempotency_keys::api_key_id,
            idempotency_keys::key,
            idempotency_keys::body.assume_not_null(),
        ))
        .load(&mut conn)
        .await
        .context("reading idempotent responses to reseal")?;
    for (api_key_id, key, stored) in stale {
        let plain = secrets
            .open(Purpose::IdempotentResponse, &stored)
            .context("a stored idempotent response")?;
        resealed.idempotent_responses += diesel::update(
            idempotency_keys::table
                .filter(idempotency_keys::api_key_id.eq(api_key_id))
                .filter(idempotency_keys::key.eq(&key))
                .filter(idempotency_keys::body.eq(&stored)),
        )
        .set(idempotency_keys::body.eq(secrets.seal(Purpose::IdempotentResponse, &plain)))
        .execute(&mut conn)
        .await
        .context("resealing an idempotent response")?;
    }
    Ok(resealed)
}
