//! Sending one webhook request.

use async_trait::async_trait;

/// Sends one webhook request over HTTPS.
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// Sends `request` once: resolves the host and refuses blocked addresses (unless private
    /// targets are allowed), connects only to a checked address, verifies TLS, follows no
    /// redirect, reads at most 16 KiB of the response, and gives up after its time-outs. Every
    /// result, failures included, is an [`crate::delivery::AttemptReport`]; this never errs.
    async fn send(
        &self,
        request: &crate::delivery::WebhookRequest,
    ) -> crate::delivery::AttemptReport;
}
