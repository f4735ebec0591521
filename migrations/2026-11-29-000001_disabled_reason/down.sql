ALTER TABLE webhook_subscriptions DROP COLUMN disabled_reason;
