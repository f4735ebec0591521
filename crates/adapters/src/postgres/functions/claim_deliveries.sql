-- The claim: up to $3 due deliveries of active subscriptions whose API key is not revoked, leased
-- until $2, with no more than $4 leased per subscription (counting those in flight). $1 is now.
-- Returns what a worker needs to send each delivery.
--
-- How it stays cheap whatever the backlog, the statistics or a held snapshot:
--   * it walks only the subscriptions that have due deliveries (a skip scan of
--     deliveries_pending_subscription_idx), each probe also returning the subscription's oldest
--     live due delivery, and the later steps start at that time inside the index, past the dead
--     entries a long-running snapshot keeps;
--   * each subscription's deliveries are locked inside its own lateral subquery (SKIP LOCKED; a
--     row changed meanwhile is re-checked when it is locked), never joined back to the table;
--   * sequential scans, hash and merge joins are off, so a plan made while the queue was small
--     (PL/pgSQL keeps plans per connection) cannot become a scan of the whole table later;
--   * the plan is kept for the connection (planning was half the cost of a claim), which is
--     safe because every step has one access path whatever the estimates;
--   * no JIT: a kept plan is costed without the call's values, and on a large analyzed queue its
--     estimate passed jit_above_cost, compiling dozens of expressions for a few hundred rows.
-- A revoked key's subscriptions are skipped even if one were left active, so a revoked
-- credential never keeps data flowing out.
CREATE OR REPLACE FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
RETURNS TABLE (event_id uuid, subscription_id text, workspace_id uuid, event_type text,
               body text, url text, secret text, attempts integer,
               failing_since timestamptz)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
    WITH RECURSIVE subs(id, first_due) AS (
        -- The subscriptions with due deliveries, one index probe each (a skip scan), each with
        -- the time of its oldest live due delivery.
        (SELECT d.subscription_id, d.next_attempt_at FROM deliveries d
         WHERE d.status = 'PENDING' AND d.next_attempt_at <= $1
         ORDER BY d.subscription_id, d.next_attempt_at LIMIT 1)
        UNION ALL
        SELECT n.subscription_id, n.next_attempt_at
        FROM subs CROSS JOIN LATERAL (
            SELECT d.subscription_id, d.next_attempt_at FROM deliveries d
            WHERE d.status = 'PENDING' AND d.next_attempt_at <= $1 AND d.subscription_id > subs.id
            ORDER BY d.subscription_id, d.next_attempt_at LIMIT 1
        ) n
    ), picked AS MATERIALIZED (
        -- Each active one's oldest due deliveries, up to its free in-flight slots, locked
        -- (skipping those another claim holds; a row changed meanwhile is re-checked against
        -- these conditions when it is locked). Both scans start at the oldest live due one.
        SELECT x.event_id, x.subscription_id, x.next_attempt_at
        FROM subs
        JOIN webhook_subscriptions s ON s.id = subs.id AND s.status = 'ACTIVE'
        JOIN api_keys k ON k.id = s.api_key_id AND k.revoked_at IS NULL
        CROSS JOIN LATERAL (
            SELECT d.event_id, d.subscription_id, d.next_attempt_at
            FROM deliveries d
            WHERE d.subscription_id = subs.id AND d.status = 'PENDING'
              AND d.next_attempt_at >= subs.first_due AND d.next_attempt_at <= $1
              AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $1)
            ORDER BY d.subscription_id, d.next_attempt_at
            LIMIT least($3, greatest(0, $4 - (SELECT count(*) FROM deliveries f
                                              WHERE f.subscription_id = subs.id
                                                AND f.status = 'PENDING'
                                                AND f.lease_expires_at IS NOT NULL
                                                AND f.next_attempt_at >= subs.first_due
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
