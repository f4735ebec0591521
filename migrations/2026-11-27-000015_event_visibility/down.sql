ALTER TABLE events DROP COLUMN visible_to;
