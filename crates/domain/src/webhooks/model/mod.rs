//! Webhooks: entities and value objects.

pub mod custom_headers;
pub mod event;
pub mod feed;
pub mod webhook;

pub use custom_headers::CustomHeaders;
pub use event::{Event, EventSubject, EventType};
pub use feed::{FeedCursor, FeedEvent, FeedPage, FeedPosition, FeedRead};
pub use webhook::{
    AttemptSummary, AuditEntry, DeliveryAttempt, DeliveryDetail, DeliveryId, DeliveryKind,
    DeliveryQuery, DeliveryRecord, DeliveryStatus, DisabledReason, HealthState, HourlyStats,
    ReplayOutcome, ReplayWindow, Subscription, SubscriptionChange, SubscriptionFilters,
    SubscriptionStatus, WebhookHealth, WebhookId,
};
