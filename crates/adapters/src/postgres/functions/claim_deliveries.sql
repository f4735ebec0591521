-- The claim: up to `claim_limit` due deliveries of active subscriptions whose API key is not
-- revoked, leased until `lease_until`, with no more than `per_subscription` leased per
-- subscription (counting those in flight), and no more than `per_workspace` per workspace for the
-- claiming process, counting what it holds (`held_workspaces`, and `held_counts` how many of
-- each), except that the workspaces of `unshared` may go past that share with what no other
-- workspace wants. `at` is now. Returns what a worker needs to send each delivery.
--
-- Fairness (the domain's InFlightCaps): however many of one workspace's endpoints hang, the
-- others keep the rest of the process's slots; and among the deliveries that fit, each
-- workspace's n-th (counting what it holds) comes before any workspace's (n+1)-th, oldest first
-- among equals: round-robin over the workspaces that wait, the least served first. The share
-- is work-conserving for the workspaces the worker names in `unshared` (those whose endpoints
-- answer quickly): their deliveries past it come after every other workspace's within its own,
-- so they take only slots nobody else waits for.
--
-- A lease is a row of delivery_leases, taken with INSERT ... ON CONFLICT on
-- the delivery's key: an expired one is taken over, a running one is not, whatever this
-- statement's snapshot saw (another claim's lease committed meanwhile is found by the insert).
-- The delivery's own row is only locked, never rewritten, so a claim adds no entry to its
-- indexes.
--
-- How it stays cheap whatever the backlog, the statistics or a held snapshot:
--   * it walks only the subscriptions that have due deliveries (a skip scan of
--     deliveries_pending_subscription_idx), each probe also returning the subscription's oldest
--     live due delivery, and the later steps start at that time inside the index, past the dead
--     entries a long-running snapshot keeps;
--   * each of those subscriptions is read by its key, never the subscriptions without due
--     deliveries (however many the installation has);
--   * each subscription's deliveries are locked inside its own lateral subquery (SKIP LOCKED; a
--     row changed meanwhile is re-checked when it is locked), never joined back to the table;
--   * sequential scans, hash and merge joins are off, so a plan made while the queue was small
--     (PL/pgSQL keeps plans per connection) cannot become a scan of the whole table later;
--   * bitmap scans are off too: on statistics of a few thousand pending deliveries, a bitmap
--     scan of a subscription's pending deliveries and a sort looks cheaper than walking them in
--     order up to the free slots, and reads all of them (with an ordering probe each) on every
--     claim of the next burst;
--   * the plan is kept for the connection (planning was half the cost of a claim), which is
--     safe because every step has one access path whatever the estimates;
--   * no JIT: a kept plan is costed without the call's values, and on a large analyzed queue its
--     estimate passed jit_above_cost, compiling dozens of expressions for a few hundred rows.
-- A revoked or expired key's subscriptions are skipped even if one were left active (housekeeping
-- disables an expired key's), so such a credential never keeps data flowing out. A disabled subscription gets its test deliveries
-- only.
--
-- Ordering (events.md section 4): a delivery is claimed only while it is the first pending one
-- (lowest sequence) of its ordering key to its subscription, leased or not: one probe per
-- candidate of deliveries_ordering_idx, the one index that can answer it (an index on the
-- subscription alone would read every pending delivery of the subscription per candidate), and
-- that only this probe can use (its predicate names the ordering key, which no other step
-- states; see the index in the baseline migration). Deliveries of other keys are not held back,
-- and one without a key is never held.
-- A claim never takes two of one key at once: the later one sees the earlier one pending.
--
-- The previous signing secret is returned while it has not expired (a rotation's window); the
-- custom headers as stored (sealed).
CREATE FUNCTION timetrack_code.claim_deliveries(
    at timestamptz, lease_until timestamptz, claim_limit bigint, per_subscription bigint,
    per_workspace bigint, held_workspaces uuid[], held_counts int[], unshared uuid[])
RETURNS TABLE (delivery_id bigint, kind text, event_id uuid, subscription_id text,
               workspace_id uuid, event_type text, body text, url text, description text,
               secret text, previous_secret text, headers text, attempts integer, failing_since timestamptz,
               failing_notified boolean, ordering_key text, sequence bigint)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_bitmapscan = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
-- The claim lock (ADR 0019): claims run one at a time on the database, each seeing the leases of
-- the ones before. The lock is the transaction's (the claim is the last statement of its
-- transaction, so it ends with the commit), and the query below takes its snapshot after it: a
-- claim never picks a delivery whose lease another claim has committed, so it never comes up
-- short, and the in-flight caps are exact across processes. Its key is the pair
-- (1953066347, 1), 1953066347 being "time" in ASCII; the two-key form keeps it apart from the
-- one-key locks of migrations and rate limits. It shows in pg_locks as an advisory lock with
-- objid 1, and a claim waiting for it as wait event Lock:advisory.
PERFORM pg_advisory_xact_lock(1953066347, 1);
RETURN QUERY
    WITH RECURSIVE subs(id, first_due) AS (
        -- The subscriptions with due deliveries, one index probe each (a skip scan), each with
        -- the time of its oldest live due delivery.
        (SELECT d.subscription_id, d.next_attempt_at FROM deliveries d
         WHERE d.status = 'PENDING' AND d.next_attempt_at <= claim_deliveries.at
         ORDER BY d.subscription_id, d.next_attempt_at LIMIT 1)
        UNION ALL
        SELECT n.subscription_id, n.next_attempt_at
        FROM subs CROSS JOIN LATERAL (
            SELECT d.subscription_id, d.next_attempt_at FROM deliveries d
            WHERE d.status = 'PENDING' AND d.next_attempt_at <= claim_deliveries.at
              AND d.subscription_id > subs.id
            ORDER BY d.subscription_id, d.next_attempt_at LIMIT 1
        ) n
    ), live AS MATERIALIZED (
        -- Their subscriptions whose API key is not revoked, with their status, the room their
        -- workspace has left in this process within its share, whether it may go past it, and
        -- so how many it may take (`reach`). Each found by its key from the probe (lateral
        -- subqueries kept apart by their LIMIT): a join let the plan walk every active
        -- subscription, and every subscription to find the disabled ones, comparing each with
        -- every probe, on every claim.
        SELECT r.*, CASE WHEN r.unshared THEN claim_deliveries.claim_limit ELSE r.room END AS reach
        FROM (
        SELECT subs.id, subs.first_due, s.status,
               claim_deliveries.per_workspace
                   - coalesce((SELECT sum(h.n)
                               FROM unnest(claim_deliveries.held_workspaces,
                                           claim_deliveries.held_counts) AS h(ws, n)
                              WHERE h.ws = s.workspace_id), 0) AS room,
               s.workspace_id = ANY (claim_deliveries.unshared) AS unshared
        FROM subs
        CROSS JOIN LATERAL (
            SELECT y.status, y.api_key_id, y.workspace_id FROM webhook_subscriptions y
            WHERE y.id = subs.id LIMIT 1
        ) s
        CROSS JOIN LATERAL (
            SELECT 1 FROM api_keys k WHERE k.id = s.api_key_id AND k.revoked_at IS NULL
                AND (k.expires_at IS NULL OR k.expires_at > claim_deliveries.at) LIMIT 1
        ) k
        ) r
    ), picked AS MATERIALIZED (
        -- Each active one's oldest due deliveries without a running lease, up to its free
        -- in-flight slots, locked (skipping those another claim holds; a row changed meanwhile
        -- is re-checked against these conditions when it is locked). Both scans start at the
        -- oldest live due one: every running lease is of a due delivery, so its due time is not
        -- older. None of a workspace that may take none, and no more than it may take.
        SELECT x.*, subs.room, subs.unshared
        FROM live subs
        CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at, d.kind, d.event_id, d.subscription_id,
                   d.workspace_id, d.attempts, d.ordering_key, d.sequence
            FROM deliveries d
            WHERE d.subscription_id = subs.id AND d.status = 'PENDING'
              AND d.next_attempt_at >= subs.first_due AND d.next_attempt_at <= claim_deliveries.at
              AND NOT EXISTS (SELECT 1 FROM delivery_leases l
                              WHERE l.delivery_id = d.id AND l.expires_at > claim_deliveries.at)
              AND (SELECT o.sequence FROM deliveries o
                   WHERE o.subscription_id || '/' || o.ordering_key
                         = subs.id || '/' || d.ordering_key
                     AND o.status NOT IN ('DELIVERED', 'FAILED', 'CANCELLED')
                     AND o.ordering_key IS NOT NULL
                   ORDER BY o.subscription_id || '/' || o.ordering_key, o.sequence
                   LIMIT 1) IS NOT DISTINCT FROM d.sequence
            ORDER BY d.subscription_id, d.next_attempt_at
            LIMIT least(claim_deliveries.claim_limit, subs.reach,
                        greatest(0, claim_deliveries.per_subscription
                                    - (SELECT count(*) FROM delivery_leases f
                                       WHERE f.subscription_id = subs.id
                                         AND f.due_at >= subs.first_due
                                         AND f.expires_at > claim_deliveries.at)))
            FOR UPDATE OF d SKIP LOCKED
        ) x
        WHERE subs.status = 'ACTIVE' AND subs.reach > 0
        UNION ALL
        -- A disabled one's test deliveries (through their own index: the disabled
        -- subscription's other pending deliveries, if any, are never walked).
        SELECT t.*, subs.room, subs.unshared
        FROM live subs
        CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at, d.kind, d.event_id, d.subscription_id,
                   d.workspace_id, d.attempts, d.ordering_key, d.sequence
            FROM deliveries d
            WHERE d.subscription_id = subs.id AND d.status = 'PENDING' AND d.kind = 'test'
              AND d.next_attempt_at <= claim_deliveries.at
              AND NOT EXISTS (SELECT 1 FROM delivery_leases l
                              WHERE l.delivery_id = d.id AND l.expires_at > claim_deliveries.at)
            ORDER BY d.subscription_id, d.next_attempt_at
            LIMIT least(claim_deliveries.claim_limit, subs.reach)
            FOR UPDATE OF d SKIP LOCKED
        ) t
        WHERE subs.status = 'DISABLED' AND subs.reach > 0
    ), ranked AS MATERIALIZED (
        -- Each one's place in its workspace's line, oldest first.
        SELECT p.*, row_number() OVER (PARTITION BY p.workspace_id
                                       ORDER BY p.next_attempt_at, p.id) AS nth
        FROM picked p
    ), due AS MATERIALIZED (
        -- Up to the batch, within each workspace's room, fairly: by how many the workspace would
        -- hold with it (`per_workspace` - room is what it holds now), then oldest first; past
        -- their room, an unshared workspace's after all of those, in the same order. The others
        -- stay unleased (their locks end with this statement's transaction).
        SELECT r.* FROM ranked r
        WHERE r.nth <= r.room OR r.unshared
        ORDER BY r.nth > r.room, (claim_deliveries.per_workspace - r.room) + r.nth,
                 r.next_attempt_at
        LIMIT claim_deliveries.claim_limit
    ), taken AS (
        -- Their leases: new, or an expired one taken over. One whose lease another claim
        -- committed after this statement's snapshot conflicts and is not taken.
        INSERT INTO delivery_leases AS x (delivery_id, workspace_id, subscription_id, due_at,
                                          expires_at)
        SELECT due.id, due.workspace_id, due.subscription_id, due.next_attempt_at,
               claim_deliveries.lease_until
        FROM due
        -- In the order of their keys, as every claim takes them: two claims that wait for each
        -- other's leases then wait in one direction.
        ORDER BY due.id
        ON CONFLICT ON CONSTRAINT delivery_leases_pkey DO UPDATE
            SET subscription_id = EXCLUDED.subscription_id, due_at = EXCLUDED.due_at,
                expires_at = EXCLUDED.expires_at
            WHERE x.expires_at <= claim_deliveries.at
        RETURNING x.delivery_id
    ), leased AS MATERIALIZED (
        SELECT due.* FROM due WHERE due.id IN (SELECT taken.delivery_id FROM taken)
    )
    -- Each leased delivery's event and subscription, each found by its key from the delivery
    -- (lateral subqueries kept apart by their LIMIT, so no plan can drive the join from events
    -- or subscriptions instead).
    -- A test sent as another type is sent with that type, any other delivery of its event (a
    -- resend) as a WEBHOOK_TEST (sent_type).
    SELECT l.id, l.kind, l.event_id, l.subscription_id, l.workspace_id,
           timetrack_code.sent_type(l.kind, e.event_type, e.sent_as),
           e.body,
           s.url, s.description, s.secret, s.previous_secret, s.headers, l.attempts, s.failing_since,
           s.failing_notified, coalesce(l.ordering_key, l.event_id::text),
           coalesce(l.sequence, 0)
    FROM leased l
    CROSS JOIN LATERAL (
        SELECT x.event_type, x.sent_as, x.body FROM events x WHERE x.id = l.event_id LIMIT 1
    ) e
    CROSS JOIN LATERAL (
        SELECT y.url, y.description, y.secret,
               CASE WHEN y.previous_secret_expires_at > claim_deliveries.at THEN y.previous_secret END
                   AS previous_secret,
               y.headers, y.failing_since, y.failing_notified_at IS NOT NULL AS failing_notified
        FROM webhook_subscriptions y WHERE y.id = l.subscription_id LIMIT 1
    ) s;
END
$fn$;
