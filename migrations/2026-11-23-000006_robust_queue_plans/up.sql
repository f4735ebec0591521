-- The queue's statements must not depend on how fresh the planner's statistics are. A queue is
-- mostly empty when autovacuum analyzes it, so the statistics say no delivery is pending; a burst
-- then met a plan that joined every pending delivery with a per-subscription subquery, re-run per row, and
-- each claim took seconds (quadratic in the backlog); and recording a batch of attempts scanned
-- the whole backlog to find its rows. Both are now written so that every step has one sensible
-- access path whatever the estimates:
--   * each subscription's deliveries are locked inside its own lateral subquery, by the pending
--     index on (subscription_id, next_attempt_at), instead of joined back to the table;
--   * the single-column due index is dropped: with stale estimates it tied with the per
--     subscription indexes and won, turning each index probe into a scan of the whole backlog;
--   * recording finds each delivery by its primary key (its "still pending" check cannot use
--     the partial indexes);
--   * both functions run with sequential scans, hash and merge joins off. PL/pgSQL keeps a plan
--     per connection, and a plan made while the queue was small (a hash join over a sequential
--     scan of deliveries) was kept as the table grew, each call reading the whole table. With
--     these off, every step is an index probe driven by the rows at hand.

DROP INDEX IF EXISTS deliveries_due_idx;

-- Nothing reads deliveries by creation time alone (housekeeping deletes events, and their
-- deliveries by key; the delivery log reads by subscription), and every write to the queue paid
-- for this index: a delivery's row is written three times (queued, leased, recorded).
DROP INDEX IF EXISTS deliveries_created_idx;

CREATE OR REPLACE FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
RETURNS TABLE (event_id uuid, subscription_id text, workspace_id uuid, event_type text,
               body text, url text, secret text, attempts integer,
               failing_since timestamptz)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
    WITH RECURSIVE subs(id) AS (
        -- The subscriptions with due deliveries, one index probe each (a skip scan).
        (SELECT d.subscription_id FROM deliveries d
         WHERE d.status = 'PENDING' AND d.next_attempt_at <= $1
         ORDER BY d.subscription_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.subscription_id FROM deliveries d
                WHERE d.status = 'PENDING' AND d.next_attempt_at <= $1 AND d.subscription_id > subs.id
                ORDER BY d.subscription_id LIMIT 1)
        FROM subs WHERE subs.id IS NOT NULL
    ), picked AS MATERIALIZED (
        -- Each active one's oldest due deliveries, up to its free in-flight slots, locked
        -- (skipping those another claim holds; a row changed meanwhile is re-checked against
        -- these conditions when it is locked).
        SELECT x.event_id, x.subscription_id, x.next_attempt_at
        FROM subs
        JOIN webhook_subscriptions s ON s.id = subs.id AND s.status = 'ACTIVE'
        CROSS JOIN LATERAL (
            SELECT d.event_id, d.subscription_id, d.next_attempt_at
            FROM deliveries d
            WHERE d.subscription_id = subs.id AND d.status = 'PENDING' AND d.next_attempt_at <= $1
              AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
            ORDER BY d.subscription_id, d.next_attempt_at
            LIMIT least($3, greatest(0, $4 - (SELECT count(*) FROM deliveries f
                                              WHERE f.subscription_id = subs.id
                                                AND f.status = 'PENDING'
                                                AND f.lease_expires_at IS NOT NULL
                                                AND f.lease_expires_at > $1)))
            FOR UPDATE OF d SKIP LOCKED
        ) x
    ), due AS MATERIALIZED (
        -- The oldest of them across subscriptions, up to the batch. The others stay unleased
        -- (their locks end with this statement's transaction).
        SELECT p.event_id, p.subscription_id FROM picked p ORDER BY p.next_attempt_at LIMIT $3
    )
    UPDATE deliveries d
    SET lease_expires_at = $2
    FROM due, events e, webhook_subscriptions s
    WHERE d.event_id = due.event_id AND d.subscription_id = due.subscription_id
      AND e.id = d.event_id AND s.id = d.subscription_id
    RETURNING d.event_id, d.subscription_id, d.workspace_id, e.event_type, e.body, s.url, s.secret,
              d.attempts, s.failing_since;
END
$fn$;

-- Records attempts that neither end nor disable their subscription, given as parallel arrays:
-- the attempt rows, the deliveries' new states (unless cancelled meanwhile), and each
-- subscription's failure clock, decided by its latest attempt of the batch.
CREATE OR REPLACE FUNCTION timetrack_record_attempts(uuid[], text[], int[], timestamptz[], int[], int[],
                                          text[], text[], text[], timestamptz[], timestamptz[],
                                          bool[])
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
    WITH r AS (
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::int[], $4::timestamptz[], $5::int[],
                             $6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                             $11::timestamptz[], $12::bool[])
            AS r(event_id, subscription_id, attempt, started_at, latency_ms, status_code, error,
                 excerpt, status, next_at, finished, done)
    ), attempt AS (
        INSERT INTO delivery_attempts (event_id, subscription_id, attempt, started_at, latency_ms,
                                       status_code, error, response_excerpt)
        SELECT event_id, subscription_id, attempt, started_at, latency_ms, status_code, error, excerpt
        FROM r
        ON CONFLICT (event_id, subscription_id, attempt) DO NOTHING
    ), delivery AS (
        UPDATE deliveries d
        SET status = r.status, attempts = r.attempt, next_attempt_at = r.next_at,
            lease_expires_at = NULL, last_status_code = r.status_code, last_error = r.error,
            updated_at = r.finished
        FROM r
        WHERE d.event_id = r.event_id AND d.subscription_id = r.subscription_id
          -- Unless cancelled meanwhile. Written so that it cannot match the partial indexes of
          -- pending deliveries: with statistics saying none is pending, the planner scanned one
          -- of them whole, for every batch, instead of finding each row by its key.
          AND d.status IS NOT DISTINCT FROM 'PENDING'
    ), latest AS (
        SELECT DISTINCT ON (subscription_id) subscription_id, done, started_at
        FROM r ORDER BY subscription_id, finished DESC
    )
    UPDATE webhook_subscriptions s
    SET failing_since = CASE WHEN latest.done THEN NULL ELSE latest.started_at END
    FROM latest
    WHERE s.id = latest.subscription_id
      AND CASE WHEN latest.done THEN s.failing_since IS NOT NULL ELSE s.failing_since IS NULL END;
END
$fn$;

ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
ALTER FUNCTION timetrack_record_attempts(uuid[], text[], int[], timestamptz[], int[], int[],
                                         text[], text[], text[], timestamptz[], timestamptz[],
                                         bool[])
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
