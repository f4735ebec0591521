-- A webhook's health is read from its attempts, newest first.
CREATE INDEX delivery_attempts_subscription_idx ON delivery_attempts (subscription_id, started_at DESC);
-- When the owner last enabled it again: its failure streak counts from there.
ALTER TABLE webhook_subscriptions ADD COLUMN streak_reset_at timestamptz NULL;
