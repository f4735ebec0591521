//! Outbound HTTP: the HTTPS webhook sender, and the client of a remote timetrack's MCP endpoint.

mod relay;
mod sender;

pub use relay::{McpRelay, RelayError};
pub use sender::{HyperWebhookSender, SenderSettings};
