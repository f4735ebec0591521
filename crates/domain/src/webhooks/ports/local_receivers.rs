//! Receivers of this machine's own that may take deliveries on a loopback address.

use crate::ids::WorkspaceId;

/// The ports of `127.0.0.1` where a local receiver (`timetrack listen`) takes deliveries now,
/// each for the workspace whose key it subscribed with: the one exception to the SSRF guard's
/// refusal of loopback addresses, asked by the URL rules at subscribe time and by the sender
/// before each attempt, so it holds only while the receiver runs, and only for its own
/// workspace's webhooks (another workspace's deliveries never show in someone's `listen`).
pub trait LocalReceivers: Send + Sync + std::fmt::Debug {
    /// Whether a local receiver of `workspace` listens on `port` of `127.0.0.1` now. MUST
    /// answer quickly and without blocking on the network.
    fn receives_at(&self, port: u16, workspace: WorkspaceId) -> bool;
}
