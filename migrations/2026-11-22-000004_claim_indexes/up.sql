-- Claiming walks the subscriptions that have due deliveries and takes each one's oldest, so its
-- cost follows what it claims, not the size of the backlog or of the delivery history.
-- Pending deliveries per subscription, oldest attempt first.
CREATE INDEX deliveries_pending_subscription_idx
    ON deliveries (subscription_id, next_attempt_at) WHERE status = 'PENDING';
-- Leased (in flight, or a crashed worker's expired lease) deliveries per subscription, to count
-- what each subscription has in flight; records and cancellations clear the lease.
CREATE INDEX deliveries_leased_subscription_idx
    ON deliveries (subscription_id, lease_expires_at)
    WHERE status = 'PENDING' AND lease_expires_at IS NOT NULL;
