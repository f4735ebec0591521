-- Custom headers per webhook (integrations.md section 4): sent with every delivery besides the
-- delivery's own. They are credentials as often as not, so they are stored sealed like the
-- signing secret (a JSON array of [name, value] pairs under the installation's key); NULL when a
-- webhook has none.
ALTER TABLE webhook_subscriptions ADD COLUMN headers text NULL;

-- The request as sent shows them too, masked: each attempt keeps the masked pairs it was sent
-- with (the values may change later, and are never kept in the clear). NULL when it had none.
ALTER TABLE delivery_attempts ADD COLUMN custom_headers text NULL;
