ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_subscription_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_api_key_fkey;
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_api_key_fkey;

ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey, ADD PRIMARY KEY (id);
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_attempt_key,
    ADD CONSTRAINT delivery_attempts_delivery_attempt_key UNIQUE (delivery_id, attempt);
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey, ADD PRIMARY KEY (id);
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, ADD PRIMARY KEY (api_key_id, key);
ALTER TABLE time_entry_tags DROP CONSTRAINT time_entry_tags_pkey, ADD PRIMARY KEY (time_entry_id, tag_id);
ALTER TABLE time_entries DROP CONSTRAINT time_entries_pkey, ADD PRIMARY KEY (id);
ALTER TABLE tags DROP CONSTRAINT tags_pkey, ADD PRIMARY KEY (id);
ALTER TABLE tasks DROP CONSTRAINT tasks_pkey, ADD PRIMARY KEY (id);
ALTER TABLE projects DROP CONSTRAINT projects_pkey, ADD PRIMARY KEY (id);
ALTER TABLE clients DROP CONSTRAINT clients_pkey, ADD PRIMARY KEY (id);
ALTER TABLE audit_log ALTER COLUMN workspace_id DROP NOT NULL;
ALTER TABLE delivery_attempts DROP COLUMN workspace_id;
ALTER TABLE idempotency_keys DROP COLUMN workspace_id;

ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey, ADD PRIMARY KEY (id);
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (id);
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_pkey, ADD PRIMARY KEY (id);
ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey, ADD PRIMARY KEY (id);

ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_delivery_fkey
    FOREIGN KEY (delivery_id) REFERENCES deliveries (id) ON DELETE CASCADE;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_subscription_id_fkey
    FOREIGN KEY (subscription_id) REFERENCES webhook_subscriptions (id) ON DELETE CASCADE;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_fkey
    FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE CASCADE;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_api_key_id_fkey
    FOREIGN KEY (api_key_id) REFERENCES api_keys (id) ON DELETE CASCADE;
ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_api_key_id_fkey
    FOREIGN KEY (api_key_id) REFERENCES api_keys (id) ON DELETE CASCADE;
