//! The HTTPS webhook sender.

mod sender;

pub use sender::{HyperWebhookSender, SenderSettings};
