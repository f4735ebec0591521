-- The catch-up feed (events.md section 5): each event's place is the id of the transaction that
-- recorded it, then its insert sequence. The feed shows only events of transactions older than
-- the oldest one still running, so an event whose transaction commits late still sorts after
-- what a reader has already seen.
ALTER TABLE events ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE events ADD COLUMN txid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX events_feed_idx ON events (workspace_id, txid, seq);
