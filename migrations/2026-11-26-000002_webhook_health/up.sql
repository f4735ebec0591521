-- A webhook's health is read from its attempts, newest first.
CREATE INDEX delivery_attempts_subscription_idx ON delivery_attempts (subscription_id, started_at DESC);
