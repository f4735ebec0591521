ALTER TABLE delivery_attempts DROP COLUMN custom_headers;
ALTER TABLE webhook_subscriptions DROP COLUMN headers;
