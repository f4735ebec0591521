ALTER TABLE deliveries DROP COLUMN not_before;
ALTER TABLE webhook_subscriptions DROP COLUMN failing_attempts;
