//! The delivery queue.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;

/// The queue of pending deliveries, shared by every worker of every process.
#[async_trait]
pub trait DeliveryQueue: Send + Sync {
    /// Records an attempt, in one transaction: the attempt row, the delivery's new state
    /// (delivered, pending again at the retry time, or failed), the change to the subscription's
    /// streak that [`streak::after_round`](crate::delivery::streak::after_round) decides from the
    /// stored streak (read and locked in the transaction), and, for `Unsubscribe` (410) or
    /// `disable_subscription`, the subscription's end with its pending deliveries cancelled (and an
    /// audit row for a 410). A delivery that is no longer pending (cancelled meanwhile) keeps its
    /// state; the attempt row is still written. A test delivery's attempt leaves the failure clock
    /// alone.
    ///
    /// The attempt's notice, if any, is written in the same transaction: its event, and one pending
    /// delivery for each active subscription of the workspace listing its type except the one it is
    /// about. `WEBHOOK_FAILING` is written only if the owner was not told of the current streak yet
    /// (and marks it told); `WEBHOOK_RECOVERED` only if they were (and clears it);
    /// `WEBHOOK_DISABLED` only if the attempt did end the subscription. Returns whether the notice
    /// was written.
    async fn record(
        &self,
        claimed: &crate::delivery::ClaimedDelivery,
        attempt: &crate::delivery::AttemptRecord,
    ) -> DomainResult<bool>;

    /// Records `attempts`, none of which may be recorded alone
    /// ([`AttemptRecord::recorded_alone`](crate::delivery::AttemptRecord::recorded_alone) false:
    /// those go through [`record`](Self::record)), each as `record` would, the streak of each
    /// subscription changed once for all its attempts (their
    /// [`Round`](crate::delivery::streak::Round)); then claims up to `limit` due deliveries of
    /// active subscriptions, and test deliveries of disabled ones (pending, next attempt at or
    /// before `now`, no live lease), leasing them until `lease_until`. Both in one transaction,
    /// committed before returning: the in-flight slots the recorded deliveries held are free for
    /// the claim, and a claimed delivery is invisible to other workers until its lease expires (a
    /// crashed worker's deliveries come back then). No subscription gets more than
    /// `caps.per_subscription` deliveries leased at once (counting those already in flight), so a
    /// slow subscriber cannot take every worker, and no workspace more than `caps.per_workspace` in
    /// the claiming process (counting `caps.held`) while another workspace's deliveries wait (a
    /// workspace of `caps.unshared` may take past it what no other wants), taken fairly between
    /// workspaces as
    /// [`InFlightCaps`](crate::delivery::InFlightCaps) says. On an error nothing is recorded and
    /// nothing claimed. Empty `attempts` is a plain claim; `limit` 0 records only. With
    /// [`ClaimWhen::IfHeldBack`](crate::delivery::ClaimWhen::IfHeldBack) the claim runs only when a
    /// subscription of `attempts` has due deliveries that no worker holds.
    async fn record_and_claim(
        &self,
        attempts: &[(
            crate::delivery::ClaimedDelivery,
            crate::delivery::AttemptRecord,
        )],
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        caps: &crate::delivery::InFlightCaps,
        when: crate::delivery::ClaimWhen,
    ) -> DomainResult<Vec<crate::delivery::ClaimedDelivery>>;

    /// How many pending deliveries there are as of `now`, and how long the oldest due one has
    /// waited, for monitoring.
    async fn stats(&self, now: OffsetDateTime) -> DomainResult<crate::delivery::QueueStats>;
}
