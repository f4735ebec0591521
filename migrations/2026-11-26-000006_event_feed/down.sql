DROP INDEX events_feed_idx;
ALTER TABLE events DROP COLUMN txid;
ALTER TABLE events DROP COLUMN seq;
