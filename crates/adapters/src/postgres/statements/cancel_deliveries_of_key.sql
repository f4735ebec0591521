-- What was queued for the subscriptions of a revoked key.
UPDATE deliveries SET status = 'CANCELLED', lease_expires_at = NULL, updated_at = :at
WHERE status = 'PENDING'
  AND subscription_id IN (SELECT id FROM webhook_subscriptions WHERE api_key_id = :api_key_id)
