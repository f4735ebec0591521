//! Webhooks: ports (storage and the outside world); each method's documentation states its contract.

mod delivery_log;
mod feed;
mod housekeeping;
mod local_receivers;
mod queue;
mod resolver;
mod sender;
mod subscriptions;

pub use delivery_log::DeliveryLog;
pub use feed::EventFeed;
pub use housekeeping::{Housekeeping, Purged, Retention};
pub use local_receivers::LocalReceivers;
pub use queue::DeliveryQueue;
pub use resolver::HostResolver;
pub use sender::WebhookSender;
pub use subscriptions::SubscriptionRepository;
