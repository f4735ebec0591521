-- Records attempts that neither end nor disable their subscription, given as parallel arrays:
-- the attempt rows, the deliveries' new states (unless cancelled meanwhile), and each
-- subscription's failure clock, decided by its latest attempt of the batch that is not a test
-- (a test delivery says how the endpoint answers a test, not how the webhook is doing), with its
-- failures in a row; and when a success ends a streak of at least five, the subscription's
-- waiting retries, brought forward to now a bounded number per round.
--
-- Each delivery is found by its primary key whatever the statistics say: the ids are also
-- given as an index condition (`d.id = ANY ($1)`), so that even a plan that drives the join
-- from deliveries (one made while the queue held a row or two, then kept for the connection)
-- reads only the batch's rows. Sequential scans, hash and merge joins are off for the same
-- reason, and bitmap scans (which would read a recovering webhook's whole backlog to bring 50
-- of it forward, as they did in the claim), and JIT too (a few hundred rows never repay
-- compiling). The plan is kept for the connection: with one access path per step it cannot go
-- wrong, and planning the statement anew on each call, as PL/pgSQL did while custom plans
-- looked cheaper, was half its cost.
CREATE OR REPLACE FUNCTION timetrack_record_attempts(bigint[], text[], int[], timestamptz[], int[],
                                                     int[], text[], text[], text[],
                                                     timestamptz[], timestamptz[], bool[], bool[],
                                                     uuid[], timestamptz[], bool[])
RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    WITH r AS (
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[], $5::int[],
                             $6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                             $11::timestamptz[], $12::bool[], $13::bool[], $14::uuid[],
                             $15::timestamptz[], $16::bool[])
            AS r(delivery_id, subscription_id, attempt, started_at, latency_ms, status_code, error,
                 excerpt, status, next_at, finished, done, test, workspace_id, not_before,
                 lossy)
    ), attempt AS (
        -- An attempt is its delivery's workspace's, which the worker took with the claim ($14):
        -- looking it up here read every delivery of the batch twice. The reference to the
        -- delivery, which includes the workspace, refuses a wrong one. A claimed delivery is
        -- pending, so it outlives the attempt: the purge keeps every event a pending delivery
        -- or one made within the retention period needs.
        INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt,
                                       started_at, latency_ms, status_code, error,
                                       response_excerpt, response_excerpt_lossy, is_test)
        SELECT r.workspace_id, r.delivery_id, r.subscription_id, r.attempt, r.started_at,
               r.latency_ms, r.status_code, r.error, r.excerpt, r.lossy, r.test
        FROM r
        ON CONFLICT (delivery_id, attempt, workspace_id) DO NOTHING
    ), delivery AS (
        UPDATE deliveries d
        SET status = r.status, attempts = r.attempt, next_attempt_at = r.next_at,
            last_status_code = r.status_code, last_error = r.error,
            updated_at = r.finished, not_before = r.not_before
        FROM r
        WHERE d.id = ANY ($1::bigint[]) AND d.id = r.delivery_id
          AND d.workspace_id = r.workspace_id
          -- Unless cancelled meanwhile. Written so that it cannot match the partial indexes of
          -- pending deliveries: with statistics saying none is pending, the planner scanned one
          -- of them whole, for every batch, instead of finding each row by its key.
          AND d.status IS NOT DISTINCT FROM 'PENDING'
        RETURNING d.id
    ), freed AS (
        -- Their leases end (those of deliveries cancelled meanwhile were deleted with them),
        -- once the update holds their rows. A claim of another process whose snapshot is older
        -- than a lease can lock its delivery's row (it is not rewritten by the claim), then finds
        -- the lease with its insert and leaves the row; deleting the lease first would have that
        -- claim wait for this round (the deleted lease) while this round waits for its row lock:
        -- a deadlock.
        DELETE FROM delivery_leases l WHERE l.delivery_id = ANY (ARRAY(SELECT id FROM delivery))
    ), marked AS (
        SELECT subscription_id, done, started_at, finished,
               max(finished) FILTER (WHERE done) OVER (PARTITION BY subscription_id) AS succeeded
        FROM r WHERE NOT test
    ), tally AS (
        -- Per subscription of the batch: its latest attempt, and its failures before and after its
        -- last success (all of them are after when none succeeded).
        SELECT subscription_id,
               (array_agg(done ORDER BY finished DESC))[1] AS done,
               (array_agg(started_at ORDER BY finished DESC))[1] AS started_at,
               max(finished) AS finished,
               count(*) FILTER (WHERE NOT done AND finished > coalesce(succeeded, '-infinity'))
                   AS failed_after,
               count(*) FILTER (WHERE NOT done AND finished < succeeded) AS failed_before,
               -- When its last success ended, and when its latest failure started: a failure
               -- that started before a success had ended was sent while the endpoint was still
               -- down, and answered late.
               max(succeeded) AS succeeded,
               max(started_at) FILTER (WHERE NOT done) AS failure_started
        FROM marked GROUP BY subscription_id
    ), was AS (
        -- The subscriptions whose row changes (a failure, a success that ends a streak, or one
        -- of a webhook whose waiting retries are being brought forward), locked in the order of
        -- their ids: rounds of several processes that share failing subscriptions then wait for
        -- each other instead of deadlocking. The lock is the one the update takes (not FOR
        -- UPDATE, which would hold up the API's writes of deliveries, whose reference checks
        -- share the row's key). With each one's failures in a row before its latest success.
        SELECT t.*, s.failing_since IS NOT NULL AS failing, s.failing_attempts, s.recovered_at,
               CASE WHEN s.failing_since IS NOT NULL THEN s.failing_attempts ELSE 0 END
                   + t.failed_before AS in_a_row
        FROM tally t JOIN webhook_subscriptions s ON s.id = t.subscription_id
        WHERE NOT t.done OR s.failing_since IS NOT NULL OR s.recovered_at IS NOT NULL
        ORDER BY s.id
        FOR NO KEY UPDATE OF s
    ), w AS (
        -- Since when each one's waiting retries are brought forward: an endpoint that failed at
        -- least five times in a row and answers again is back, and its retries waiting since
        -- before that answer are due now, not at their schedule's next step (hours away late in
        -- it); while it keeps answering, each round brings more of them. One failing payload
        -- among successes never makes five in a row, so its schedule stands; a failure stops
        -- the bringing forward (the endpoint may be down again; the next streak's end starts it
        -- anew), but not one of an attempt that started before the success had finished: at the
        -- end of an outage, attempts sent while the endpoint was down still answer after the
        -- first success, and must not be taken for a new outage (the backlog would wait for its
        -- schedule). That success is this round's, or, for a round that records only such late
        -- answers, the one the bringing forward started from.
        SELECT was.*,
               CASE WHEN was.failure_started
                             > coalesce(was.succeeded, was.recovered_at, '-infinity') THEN NULL
                    WHEN was.in_a_row >= 5 THEN was.finished
                    ELSE was.recovered_at END AS back_since
        FROM was
    ), chosen AS MATERIALIZED (
        -- Up to 50 of each such webhook's retries waiting since before it was back, oldest
        -- first (the claim takes a webhook's deliveries a few at a time, so 50 a round keeps its
        -- in-flight slots full, and no round pays for the whole backlog), each walk in its own
        -- lateral subquery along the webhook's pending deliveries. A retry scheduled by a
        -- failure after it was back (a payload that still fails) is not brought again, nor one
        -- before the time its receiver asked for (`Retry-After`).
        SELECT n.id, b.subscription_id, b.finished
        FROM w b CROSS JOIN LATERAL (
            SELECT p.id FROM deliveries p
            WHERE p.subscription_id = b.subscription_id AND p.status = 'PENDING'
              AND p.next_attempt_at > b.finished AND p.updated_at <= b.back_since
              AND (p.not_before IS NULL OR p.not_before <= b.finished)
            ORDER BY p.subscription_id, p.next_attempt_at
            LIMIT 50
        ) n
        WHERE b.back_since IS NOT NULL
    ), pulled AS (
        -- By their ids as an array: an index condition on the primary key, the one access path
        -- whatever the plan's estimates (a join could be driven from deliveries by a plan made
        -- on a tiny queue, reading all of it).
        UPDATE deliveries d
        SET next_attempt_at = c.finished, updated_at = c.finished
        FROM chosen c
        WHERE d.id = ANY (ARRAY(SELECT id FROM chosen)) AND d.id = c.id
        RETURNING d.subscription_id
    )
    -- A success ends the streak, and with it what the owner was told of it (a success that ends
    -- a told streak is normally recorded on its own, with its WEBHOOK_RECOVERED; one claimed
    -- before the streak began lands here, and the next streak is told again). A failure starts a
    -- streak or counts into it. A webhook being brought back stays so while a round brings a full
    -- 50 (there may be more). A success of a webhook that is doing well writes nothing.
    UPDATE webhook_subscriptions s
    SET failing_since = CASE WHEN w.done THEN NULL
                             ELSE coalesce(s.failing_since, w.started_at) END,
        failing_notified_at = CASE WHEN w.done THEN NULL ELSE s.failing_notified_at END,
        failing_attempts = CASE WHEN w.done THEN 0
                                WHEN w.failing AND w.failed_before = 0
                                    THEN s.failing_attempts + w.failed_after
                                ELSE w.failed_after END,
        recovered_at = CASE WHEN (SELECT count(*) FROM pulled p
                                  WHERE p.subscription_id = w.subscription_id) >= 50
                            THEN w.back_since END
    FROM w
    WHERE s.id = w.subscription_id AND (NOT w.done OR w.failing OR w.recovered_at IS NOT NULL);
END
$fn$;
