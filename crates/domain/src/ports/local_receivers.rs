//! Receivers of this machine's own that may take deliveries on a loopback address.

/// The loopback ports where a local receiver (`timetrack listen`) takes deliveries now: the one
/// exception to the SSRF guard's refusal of loopback addresses, asked by the URL rules at
/// subscribe time and by the sender before each attempt, so it holds only while the receiver
/// runs.
pub trait LocalReceivers: Send + Sync + std::fmt::Debug {
    /// Whether a local receiver listens on `port` of the loopback address now. MUST answer
    /// quickly and without blocking on the network.
    fn receives_at(&self, port: u16) -> bool;
}
