//! Webhooks: services: the rules, written against ports only.

pub mod delivery;
pub mod feed;
pub mod webhooks;

pub use delivery::{DeliveryService, DeliverySettings};
pub use feed::FeedService;
pub use webhooks::{
    DeliveryFilter, NewSubscription, ReplayRequest, RotatedSecret, WebhookChange, WebhookService,
    WebhookSettings,
};
