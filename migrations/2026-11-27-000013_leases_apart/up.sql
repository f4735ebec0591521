-- A delivery's lease (a worker holds it until then) moves out of deliveries into a table of its
-- own. As a column of deliveries, in the predicate of the index that counted a subscription's
-- leases, every claim wrote a new version of the delivery with an entry in each of its six
-- indexes (8.6 WAL records per claimed delivery in the latency benchmark), and left as many dead
-- entries for vacuum, in the failing webhook's range of the pending index too during an outage.
-- Now a claim adds one row here (two index entries) and locks the delivery's row; the round that
-- records the attempt deletes it. The table holds what is in flight, and the expired leases of a
-- stopped process until their deliveries are claimed again or end.
--
-- A lease is taken with INSERT ... ON CONFLICT on its key, which sees every committed lease
-- whatever the claim's snapshot: a delivery is never leased twice while its lease runs.
CREATE TABLE delivery_leases (
    delivery_id     bigint      NOT NULL,
    workspace_id    uuid        NOT NULL,
    subscription_id text        NOT NULL,
    -- The delivery's due time when it was claimed (a leased delivery's does not change).
    due_at          timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (delivery_id, workspace_id),
    FOREIGN KEY (delivery_id, workspace_id) REFERENCES deliveries (id, workspace_id)
        ON DELETE CASCADE
);
-- A subscription's leases by due time, for the claim's count of what it has in flight: the count
-- starts at the subscription's oldest live due delivery, past the dead rows of the leases of
-- deliveries already recorded (and those a held snapshot keeps).
CREATE INDEX delivery_leases_subscription_idx ON delivery_leases (subscription_id, due_at);
-- Every row is short-lived: vacuum it often.
ALTER TABLE delivery_leases SET (autovacuum_vacuum_scale_factor = 0,
                                 autovacuum_vacuum_threshold = 500,
                                 autovacuum_vacuum_cost_delay = 0);

INSERT INTO delivery_leases (delivery_id, workspace_id, subscription_id, due_at, expires_at)
SELECT id, workspace_id, subscription_id, next_attempt_at, lease_expires_at FROM deliveries
WHERE status = 'PENDING' AND lease_expires_at IS NOT NULL;

DROP INDEX deliveries_leased_due_idx;
ALTER TABLE deliveries DROP COLUMN lease_expires_at;
