-- Subscription filters (events.md section 3): what an event is about, recorded with it, and what
-- each subscription wants, compared in the fan-out itself (a filtered-out event makes no
-- delivery row).
ALTER TABLE events ADD COLUMN project_id uuid NULL;
ALTER TABLE events ADD COLUMN client_id uuid NULL;
ALTER TABLE events ADD COLUMN user_id uuid NULL;
ALTER TABLE events ADD COLUMN billable boolean NULL;

-- NULL: no such filter. A given filter holds at least one id.
ALTER TABLE webhook_subscriptions ADD COLUMN filter_project_ids uuid[] NULL
    CHECK (cardinality(filter_project_ids) BETWEEN 1 AND 100);
ALTER TABLE webhook_subscriptions ADD COLUMN filter_client_ids uuid[] NULL
    CHECK (cardinality(filter_client_ids) BETWEEN 1 AND 100);
ALTER TABLE webhook_subscriptions ADD COLUMN filter_user_ids uuid[] NULL
    CHECK (cardinality(filter_user_ids) BETWEEN 1 AND 100);
ALTER TABLE webhook_subscriptions ADD COLUMN filter_billable boolean NULL;
