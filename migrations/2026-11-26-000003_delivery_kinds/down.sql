ALTER TABLE webhook_subscriptions DROP COLUMN failing_notified_at;
ALTER TABLE webhook_subscriptions DROP COLUMN previous_secret_expires_at;
ALTER TABLE webhook_subscriptions DROP COLUMN previous_secret;
DELETE FROM deliveries WHERE kind = 'test';
DELETE FROM events WHERE event_type NOT IN ('TIMER_STARTED', 'TIMER_STOPPED', 'TIME_ENTRY_CREATED', 'CLIENT_CREATED');
ALTER TABLE events DROP COLUMN about_webhook_id;
ALTER TABLE events DROP CONSTRAINT events_event_type_check;
ALTER TABLE events ADD CONSTRAINT events_event_type_check CHECK (event_type IN (
    'TIMER_STARTED', 'TIMER_STOPPED', 'TIME_ENTRY_CREATED', 'CLIENT_CREATED'));
-- Only the first delivery of each (event, subscription) survives the way back.
DELETE FROM deliveries d USING deliveries o
WHERE o.event_id = d.event_id AND o.subscription_id = d.subscription_id AND o.id < d.id;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_attempt_key;
ALTER TABLE delivery_attempts ADD COLUMN event_id uuid;
UPDATE delivery_attempts a SET event_id = d.event_id FROM deliveries d WHERE d.id = a.delivery_id;
ALTER TABLE delivery_attempts ALTER COLUMN event_id SET NOT NULL;
DROP INDEX deliveries_subscription_idx;
CREATE INDEX deliveries_subscription_idx ON deliveries (subscription_id, created_at DESC);
DROP INDEX deliveries_event_idx;
DROP INDEX deliveries_pending_test_idx;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey;
ALTER TABLE deliveries ADD PRIMARY KEY (event_id, subscription_id);
ALTER TABLE delivery_attempts DROP COLUMN delivery_id;
ALTER TABLE delivery_attempts DROP COLUMN is_test;
ALTER TABLE delivery_attempts
    ADD CONSTRAINT delivery_attempts_delivery_attempt_key UNIQUE (event_id, subscription_id, attempt),
    ADD CONSTRAINT delivery_attempts_event_id_subscription_id_fkey
        FOREIGN KEY (event_id, subscription_id) REFERENCES deliveries (event_id, subscription_id) ON DELETE CASCADE;
ALTER TABLE deliveries DROP COLUMN kind;
ALTER TABLE deliveries DROP COLUMN id;
