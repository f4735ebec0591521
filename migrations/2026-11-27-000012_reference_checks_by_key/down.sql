DROP INDEX webhook_subscriptions_workspace_idx;
CREATE INDEX webhook_subscriptions_workspace_idx
    ON webhook_subscriptions (workspace_id, created_at DESC, id DESC);
DROP INDEX events_workspace_created_idx;
CREATE INDEX events_workspace_created_idx ON events (workspace_id, created_at DESC);
DROP INDEX events_feed_idx;
CREATE INDEX events_feed_idx ON events (workspace_id, txid, seq);
