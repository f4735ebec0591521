// Cargo.toml: hmac = "0.12", sha2 = "0.10", base64 = "0.22"
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Checks a delivery. `secret` is the webhook's `whsec_...` secret; `id`, `timestamp` and
/// `signature` are the `webhook-id`, `webhook-timestamp` and `webhook-signature` headers;
/// `body` is the request body exactly as received; `now` is the current Unix time in seconds.
/// True when one of the signatures matches (during a secret rotation the header holds two) and
/// the timestamp is within five minutes.
pub fn verify(
    secret: &str,
    id: &str,
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now: i64,
) -> bool {
    let Ok(sent) = timestamp.parse::<i64>() else {
        return false;
    };
    if (now - sent).abs() > 300 {
        return false;
    }
    let Ok(key) = STANDARD.decode(secret.trim_start_matches("whsec_")) else {
        return false;
    };
    signature.split(' ').any(|candidate| {
        let Some(Ok(expected)) = candidate.strip_prefix("v1,").map(|s| STANDARD.decode(s)) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    })
}
