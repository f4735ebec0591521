-- Claim past what a held snapshot keeps. While any transaction's snapshot is older than a
-- delivery's last change (a long report, a backup, ANALYZE of a large table), the index entries of
-- the versions it replaced cannot be marked dead, and every index scan over them visits the heap to
-- find them invisible. Each claim walked them three times per subscription: to find the
-- subscription (the skip scan), to count its leased deliveries, and to pick its due ones. With a
-- snapshot held 12 s at 2,000 deliveries/s that was about 1,700 + 3,400 + 4,200 heap visits per
-- subscription and round.
--
-- The skip scan now also returns each subscription's oldest live due delivery (the first entry it
-- found alive, in the same index order), and the other two steps start at that time inside the
-- index instead of at the subscription's first entry: every live pending delivery of the
-- subscription that is due has a `next_attempt_at` at or after it (same statement, same snapshot;
-- a row locked meanwhile is re-checked, and its time does not move while it stays pending), so
-- nothing they would have found lies before it. For the count, the leased index is keyed by
-- `next_attempt_at` instead of `lease_expires_at`: a leased delivery is pending and was due when
-- it was claimed, so its time is at or after the oldest due one's too. The count has no upper
-- bound on that time, so a lease taken by a process whose clock runs ahead is still counted.
-- Only the skip scan still walks the entries before the first live one.

CREATE INDEX deliveries_leased_due_idx
    ON deliveries (subscription_id, next_attempt_at)
    WHERE status = 'PENDING' AND lease_expires_at IS NOT NULL;
DROP INDEX deliveries_leased_subscription_idx;

CREATE OR REPLACE FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
RETURNS TABLE (event_id uuid, subscription_id text, workspace_id uuid, event_type text,
               body text, url text, secret text, attempts integer,
               failing_since timestamptz)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_custom_plan
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
