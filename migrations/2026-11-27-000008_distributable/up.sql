-- Distributable by workspace (docs/scaling.md): every workspace-owned table carries
-- `workspace_id`, and every reference from one workspace-owned row to another includes it, so a
-- row can never point into another workspace and the schema can be sharded by workspace (as by
-- Citus, where a foreign key between distributed tables must include the distribution column)
-- without a redesign. The tables below were the last whose references named a bare id.
--
-- Where a reference needs (id, workspace_id) to be unique, the primary key becomes that pair
-- instead of gaining a second index: the key still leads with the id, so a lookup by id alone
-- reads the same index as before, and the hot tables (events, deliveries) pay for no extra index
-- on each write. The ids stay unique on their own by construction (random or generated).

-- The references that named a bare id go first, as they depend on the keys replaced below.
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_api_key_id_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_api_key_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_subscription_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_fkey;

ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey, ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_pkey,
    ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey, ADD PRIMARY KEY (id, workspace_id);

-- Idempotency keys belong to an API key, and so to its workspace.
ALTER TABLE idempotency_keys ADD COLUMN workspace_id uuid NULL;
UPDATE idempotency_keys i SET workspace_id = k.workspace_id FROM api_keys k WHERE k.id = i.api_key_id;
DELETE FROM idempotency_keys WHERE workspace_id IS NULL;
ALTER TABLE idempotency_keys ALTER COLUMN workspace_id SET NOT NULL;

-- An attempt belongs to its delivery, and so to its workspace.
ALTER TABLE delivery_attempts ADD COLUMN workspace_id uuid NULL;
UPDATE delivery_attempts a SET workspace_id = d.workspace_id FROM deliveries d WHERE d.id = a.delivery_id;
DELETE FROM delivery_attempts WHERE workspace_id IS NULL;
ALTER TABLE delivery_attempts ALTER COLUMN workspace_id SET NOT NULL;

-- Every audit row is about something in a workspace (the service writes none without one).
DELETE FROM audit_log WHERE workspace_id IS NULL;
ALTER TABLE audit_log ALTER COLUMN workspace_id SET NOT NULL;

-- Every key of a workspace-owned table includes the workspace too (a distributed table's unique
-- keys must include its distribution column). Two unique indexes are knowingly not: an API key
-- is found by its hash before its workspace is known, and a person runs one timer at a time
-- across their workspaces (docs/scaling.md says how each is kept when sharded).
ALTER TABLE clients DROP CONSTRAINT clients_pkey, ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE projects DROP CONSTRAINT projects_pkey, ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE tasks DROP CONSTRAINT tasks_pkey, ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE tags DROP CONSTRAINT tags_pkey, ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE time_entries DROP CONSTRAINT time_entries_pkey, ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE time_entry_tags DROP CONSTRAINT time_entry_tags_pkey,
    ADD PRIMARY KEY (time_entry_id, tag_id, workspace_id);
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey,
    ADD PRIMARY KEY (api_key_id, key, workspace_id);
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey,
    ADD PRIMARY KEY (id, workspace_id);
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_attempt_key,
    ADD CONSTRAINT delivery_attempts_delivery_attempt_key UNIQUE (delivery_id, attempt, workspace_id);
ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey, ADD PRIMARY KEY (id, workspace_id);

ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_api_key_fkey
    FOREIGN KEY (api_key_id, workspace_id) REFERENCES api_keys (id, workspace_id) ON DELETE CASCADE;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_api_key_fkey
    FOREIGN KEY (api_key_id, workspace_id) REFERENCES api_keys (id, workspace_id) ON DELETE CASCADE;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_fkey
    FOREIGN KEY (event_id, workspace_id) REFERENCES events (id, workspace_id) ON DELETE CASCADE;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_subscription_fkey
    FOREIGN KEY (subscription_id, workspace_id) REFERENCES webhook_subscriptions (id, workspace_id)
    ON DELETE CASCADE;
ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_delivery_fkey
    FOREIGN KEY (delivery_id, workspace_id) REFERENCES deliveries (id, workspace_id)
    ON DELETE CASCADE;
