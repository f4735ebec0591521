-- Ordering per entity (events.md section 4): each event names the entity it is about (its
-- ordering key), and each delivery carries its event's key and sequence, so the claim holds a
-- delivery back while an earlier one of the same key to the same subscription is still pending.
-- The service always sets them; a row written without them is simply not ordered.
ALTER TABLE events ADD COLUMN ordering_key text NULL;
UPDATE events SET ordering_key = COALESCE(about_webhook_id, body::json ->> 'id', id::text);

ALTER TABLE deliveries ADD COLUMN ordering_key text NULL;
ALTER TABLE deliveries ADD COLUMN sequence bigint NULL;
UPDATE deliveries d SET ordering_key = e.ordering_key, sequence = e.seq
FROM events e WHERE e.id = d.event_id;

-- The earlier pending deliveries of a key to a subscription: what the claim asks of each
-- candidate. Only pending rows, so it stays the size of the queue. It is built so that no other
-- index of deliveries can answer the claim's probe, whatever the statistics say (an index on the
-- subscription alone would read all of its pending deliveries per candidate): its leading
-- column is the subscription and the key as one value, and its predicate names the pending rows
-- as "not final" where the other partial indexes say `status = 'PENDING'` (the same rows, as
-- the status CHECK allows four values, but not a predicate the planner can prove of the other).
CREATE INDEX deliveries_ordering_idx
    ON deliveries ((subscription_id || '/' || ordering_key), sequence)
    WHERE status NOT IN ('DELIVERED', 'FAILED', 'CANCELLED');
