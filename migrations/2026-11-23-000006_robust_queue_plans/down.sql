-- The queue functions of migration 000005, and the indexes it dropped.
ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint) RESET ALL;
ALTER FUNCTION timetrack_record_attempts(uuid[], text[], int[], timestamptz[], int[], int[],
                                         text[], text[], text[], timestamptz[], timestamptz[],
                                         bool[]) RESET ALL;
CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX deliveries_created_idx ON deliveries (created_at);

-- Claims up to $3 due deliveries of active subscriptions, leasing them until $2, with no more
-- than $4 leased per subscription (counting those in flight): walks the subscriptions with due
-- deliveries (a skip scan), takes each one's oldest up to its free slots, locks them with
-- SKIP LOCKED and sets their lease. Returns what a worker needs to send each.
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
        (SELECT subscription_id FROM deliveries
         WHERE status = 'PENDING' AND next_attempt_at <= $1
         ORDER BY subscription_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.subscription_id FROM deliveries d
                WHERE d.status = 'PENDING' AND d.next_attempt_at <= $1 AND d.subscription_id > subs.id
                ORDER BY d.subscription_id LIMIT 1)
        FROM subs WHERE subs.id IS NOT NULL
    ), picked AS (
        -- Each active one's oldest due deliveries, up to its free in-flight slots.
        SELECT x.event_id, x.subscription_id, x.next_attempt_at
        FROM subs
        JOIN webhook_subscriptions s ON s.id = subs.id AND s.status = 'ACTIVE'
        CROSS JOIN LATERAL (
            SELECT d.event_id, d.subscription_id, d.next_attempt_at
            FROM deliveries d
            WHERE d.subscription_id = subs.id AND d.status = 'PENDING' AND d.next_attempt_at <= $1
              AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
            ORDER BY d.subscription_id, d.next_attempt_at
            LIMIT greatest(0, $4 - (SELECT count(*) FROM deliveries f
                                    WHERE f.subscription_id = subs.id AND f.status = 'PENDING'
                                      AND f.lease_expires_at IS NOT NULL AND f.lease_expires_at > $1))
        ) x
    ), due AS (
        SELECT d.event_id, d.subscription_id
        FROM deliveries d
        JOIN picked p ON p.event_id = d.event_id AND p.subscription_id = d.subscription_id
        -- Repeated here so that they are re-checked on a row another worker just leased: the
        -- CTEs above were evaluated on the statement's snapshot.
        WHERE d.status = 'PENDING'
          AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
        ORDER BY p.next_attempt_at
        LIMIT $3
        FOR UPDATE OF d SKIP LOCKED
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
          AND d.status = 'PENDING'
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
