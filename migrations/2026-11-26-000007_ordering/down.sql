DROP INDEX deliveries_ordering_idx;
ALTER TABLE deliveries DROP COLUMN sequence;
ALTER TABLE deliveries DROP COLUMN ordering_key;
ALTER TABLE events DROP COLUMN ordering_key;
