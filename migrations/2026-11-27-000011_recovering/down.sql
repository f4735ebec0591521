ALTER TABLE webhook_subscriptions DROP COLUMN recovered_at;
