-- A delivery gets its own id and a kind: the same event can now be delivered to a subscription
-- more than once (a replay, a resend), and a test delivery is sent outside the event fan-out.
ALTER TABLE deliveries ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE deliveries ADD COLUMN kind text NOT NULL DEFAULT 'event'
    CHECK (kind IN ('event', 'replay', 'resend', 'test'));

-- Attempts belong to a delivery by its id. `is_test` keeps test attempts out of a webhook's
-- health (they say how the endpoint answers a test, not how the webhook is doing).
ALTER TABLE delivery_attempts ADD COLUMN delivery_id bigint;
ALTER TABLE delivery_attempts ADD COLUMN is_test boolean NOT NULL DEFAULT false;
UPDATE delivery_attempts a SET delivery_id = d.id
FROM deliveries d WHERE d.event_id = a.event_id AND d.subscription_id = a.subscription_id;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_event_id_subscription_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_attempt_key;
ALTER TABLE delivery_attempts DROP COLUMN event_id;
ALTER TABLE delivery_attempts ALTER COLUMN delivery_id SET NOT NULL;

ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey;
ALTER TABLE deliveries ADD PRIMARY KEY (id);
-- An event's deliveries (the cascade of a purged event; what a replay asks: has this webhook
-- received this event?).
CREATE INDEX deliveries_event_idx ON deliveries (event_id, subscription_id);
-- The delivery log of a subscription, newest first, by id.
DROP INDEX deliveries_subscription_idx;
CREATE INDEX deliveries_subscription_idx ON deliveries (subscription_id, id DESC);

-- Pending test deliveries, which a disabled subscription still gets: the claim finds them
-- without walking the subscription's other pending deliveries. Almost always empty.
CREATE INDEX deliveries_pending_test_idx
    ON deliveries (subscription_id, next_attempt_at) WHERE status = 'PENDING' AND kind = 'test';

ALTER TABLE delivery_attempts
    ADD CONSTRAINT delivery_attempts_delivery_attempt_key UNIQUE (delivery_id, attempt),
    ADD CONSTRAINT delivery_attempts_delivery_fkey
        FOREIGN KEY (delivery_id) REFERENCES deliveries (id) ON DELETE CASCADE;

-- The events about webhooks (notices to their owner, and test deliveries).
ALTER TABLE events DROP CONSTRAINT events_event_type_check;
ALTER TABLE events ADD CONSTRAINT events_event_type_check CHECK (event_type IN (
    'TIMER_STARTED', 'TIMER_STOPPED', 'TIME_ENTRY_CREATED', 'CLIENT_CREATED',
    'WEBHOOK_FAILING', 'WEBHOOK_DISABLED', 'WEBHOOK_RECOVERED', 'WEBHOOK_TEST'));

-- A notice names the webhook it is about, which never receives it (nor by a replay).
ALTER TABLE events ADD COLUMN about_webhook_id text NULL;

-- Secret rotation: the previous secret keeps signing (beside the new one) until it expires.
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret text NULL;
ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret_expires_at timestamptz NULL;
-- When the owner was told that the current failure streak has lasted (WEBHOOK_FAILING); NULL
-- when not told, or after the streak ended.
ALTER TABLE webhook_subscriptions ADD COLUMN failing_notified_at timestamptz NULL;
