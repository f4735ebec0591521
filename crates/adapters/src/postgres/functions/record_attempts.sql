-- Records attempts that neither end nor disable their subscription, given as parallel arrays:
-- the attempt rows, the deliveries' new states (unless cancelled meanwhile), and each
-- subscription's failure clock, decided by its latest attempt of the batch that is not a test
-- (a test delivery says how the endpoint answers a test, not how the webhook is doing), with its
-- failures in a row; and when a success ends a streak of at least five, the subscription's
-- waiting retries, brought forward to now.
--
-- Each delivery is found by its primary key whatever the statistics say: the ids are also
-- given as an index condition (`d.id = ANY ($1)`), so that even a plan that drives the join
-- from deliveries (one made while the queue held a row or two, then kept for the connection)
-- reads only the batch's rows. Sequential scans, hash and merge joins are off for the same
-- reason, and JIT too (a few hundred rows never repay compiling). The plan is kept for the
-- connection: with one access path per step it cannot go wrong, and planning the statement
-- anew on each call, as PL/pgSQL did while custom plans looked cheaper, was half its cost.
CREATE OR REPLACE FUNCTION timetrack_record_attempts(bigint[], text[], int[], timestamptz[], int[],
                                                     int[], text[], text[], text[],
                                                     timestamptz[], timestamptz[], bool[], bool[],
                                                     uuid[], timestamptz[])
RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    WITH r AS (
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[], $5::int[],
                             $6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                             $11::timestamptz[], $12::bool[], $13::bool[], $14::uuid[],
                             $15::timestamptz[])
            AS r(delivery_id, subscription_id, attempt, started_at, latency_ms, status_code, error,
                 excerpt, status, next_at, finished, done, test, workspace_id, not_before)
    ), attempt AS (
        -- An attempt is its delivery's workspace's, which the worker took with the claim ($14):
        -- looking it up here read every delivery of the batch twice. The reference to the
        -- delivery, which includes the workspace, refuses a wrong one. A claimed delivery is
        -- pending, so it outlives the attempt: the purge keeps every event a pending delivery
        -- or one made within the retention period needs.
        INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt,
                                       started_at, latency_ms, status_code, error,
                                       response_excerpt, is_test)
        SELECT r.workspace_id, r.delivery_id, r.subscription_id, r.attempt, r.started_at,
               r.latency_ms, r.status_code, r.error, r.excerpt, r.test
        FROM r
        ON CONFLICT (delivery_id, attempt, workspace_id) DO NOTHING
    ), delivery AS (
        UPDATE deliveries d
        SET status = r.status, attempts = r.attempt, next_attempt_at = r.next_at,
            lease_expires_at = NULL, last_status_code = r.status_code, last_error = r.error,
            updated_at = r.finished, not_before = r.not_before
        FROM r
        WHERE d.id = ANY ($1::bigint[]) AND d.id = r.delivery_id
          AND d.workspace_id = r.workspace_id
          -- Unless cancelled meanwhile. Written so that it cannot match the partial indexes of
          -- pending deliveries: with statistics saying none is pending, the planner scanned one
          -- of them whole, for every batch, instead of finding each row by its key.
          AND d.status IS NOT DISTINCT FROM 'PENDING'
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
               count(*) FILTER (WHERE NOT done AND finished < succeeded) AS failed_before
        FROM marked GROUP BY subscription_id
    ), was AS (
        -- The subscriptions whose row changes (a failure, or a success that ends a streak),
        -- locked in the order of their ids: rounds of several processes that share failing
        -- subscriptions then wait for each other instead of deadlocking. The lock is the one the
        -- update takes (not FOR UPDATE, which would hold up the API's writes of deliveries,
        -- whose reference checks share the row's key).
        SELECT t.*, s.failing_since IS NOT NULL AS failing, s.failing_attempts
        FROM tally t JOIN webhook_subscriptions s ON s.id = t.subscription_id
        WHERE NOT t.done OR s.failing_since IS NOT NULL
        ORDER BY s.id
        FOR NO KEY UPDATE OF s
    ), streak AS (
        -- A success ends the streak, and with it what the owner was told of it (a success that
        -- ends a told streak is normally recorded on its own, with its WEBHOOK_RECOVERED; one
        -- claimed before the streak began lands here, and the next streak is told again). A
        -- failure starts a streak or counts into it. A success of a webhook that is doing well
        -- writes nothing.
        UPDATE webhook_subscriptions s
        SET failing_since = CASE WHEN w.done THEN NULL
                                 ELSE coalesce(s.failing_since, w.started_at) END,
            failing_notified_at = CASE WHEN w.done THEN NULL ELSE s.failing_notified_at END,
            failing_attempts = CASE WHEN w.done THEN 0
                                    WHEN w.failing AND w.failed_before = 0
                                        THEN s.failing_attempts + w.failed_after
                                    ELSE w.failed_after END
        FROM was w
        WHERE s.id = w.subscription_id AND (NOT w.done OR w.failing)
        RETURNING s.id, w.done, w.finished,
                  CASE WHEN w.failing THEN w.failing_attempts ELSE 0 END + w.failed_before
                      AS in_a_row
    )
    -- An endpoint that failed at least five times in a row and answers again is back: its
    -- waiting retries are due now, not at their schedule's next step (hours away late in it).
    -- One failing payload among successes never makes five in a row, so its schedule stands;
    -- nor is a retry brought before the time its receiver asked for (`Retry-After`).
    -- The subscriptions are also given as an index condition, so that whatever the statistics
    -- say, only their pending deliveries are read, and none when no streak ended.
    UPDATE deliveries d
    SET next_attempt_at = b.finished, updated_at = b.finished
    FROM streak b
    WHERE d.subscription_id = ANY (ARRAY(SELECT id FROM streak WHERE done AND in_a_row >= 5))
      AND d.subscription_id = b.id AND b.done AND b.in_a_row >= 5
      AND d.status = 'PENDING' AND d.next_attempt_at > b.finished
      AND (d.not_before IS NULL OR d.not_before <= b.finished);
END
$fn$;
