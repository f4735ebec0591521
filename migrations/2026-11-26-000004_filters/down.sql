ALTER TABLE webhook_subscriptions DROP COLUMN filter_billable;
ALTER TABLE webhook_subscriptions DROP COLUMN filter_user_ids;
ALTER TABLE webhook_subscriptions DROP COLUMN filter_client_ids;
ALTER TABLE webhook_subscriptions DROP COLUMN filter_project_ids;
ALTER TABLE events DROP COLUMN billable;
ALTER TABLE events DROP COLUMN user_id;
ALTER TABLE events DROP COLUMN client_id;
ALTER TABLE events DROP COLUMN project_id;
