-- What was queued for the subscriptions of a revoked key, and the leases of those in flight.
WITH subs AS (
    SELECT id FROM webhook_subscriptions WHERE api_key_id = :api_key_id
), freed AS (
    DELETE FROM delivery_leases WHERE subscription_id IN (SELECT id FROM subs)
)
UPDATE deliveries SET status = 'CANCELLED', updated_at = :at
WHERE status = 'PENDING' AND subscription_id IN (SELECT id FROM subs)
