-- The failed attempts in a row of a failing webhook's streak (tests aside): a success that ends
-- a streak of at least five brings the webhook's waiting retries forward (an endpoint that was
-- down is back), while one failing payload among successes never does. Read only while
-- `failing_since` is set.
ALTER TABLE webhook_subscriptions ADD COLUMN failing_attempts integer NOT NULL DEFAULT 0;
-- A retry the receiver asked to wait for (a 429 or 503 with `Retry-After`): it is not brought
-- forward before this time.
ALTER TABLE deliveries ADD COLUMN not_before timestamptz;
