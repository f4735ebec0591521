-- Records attempts that neither end nor disable their subscription, given as parallel arrays:
-- the attempt rows, the deliveries' new states (unless cancelled meanwhile), and each
-- subscription's failure clock, decided by its latest attempt of the batch that is not a test
-- (a test delivery says how the endpoint answers a test, not how the webhook is doing).
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
                                                     uuid[])
RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    WITH r AS (
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[], $5::int[],
                             $6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                             $11::timestamptz[], $12::bool[], $13::bool[], $14::uuid[])
            AS r(delivery_id, subscription_id, attempt, started_at, latency_ms, status_code, error,
                 excerpt, status, next_at, finished, done, test, workspace_id)
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
            updated_at = r.finished
        FROM r
        WHERE d.id = ANY ($1::bigint[]) AND d.id = r.delivery_id
          AND d.workspace_id = r.workspace_id
          -- Unless cancelled meanwhile. Written so that it cannot match the partial indexes of
          -- pending deliveries: with statistics saying none is pending, the planner scanned one
          -- of them whole, for every batch, instead of finding each row by its key.
          AND d.status IS NOT DISTINCT FROM 'PENDING'
    ), latest AS (
        SELECT DISTINCT ON (subscription_id) subscription_id, done, started_at
        FROM r WHERE NOT test ORDER BY subscription_id, finished DESC
    )
    -- A success ends the streak, and with it what the owner was told of it (a success that
    -- ends a told streak is normally recorded on its own, with its WEBHOOK_RECOVERED; one
    -- claimed before the streak began lands here, and the next streak is told again).
    UPDATE webhook_subscriptions s
    SET failing_since = CASE WHEN latest.done THEN NULL ELSE latest.started_at END,
        failing_notified_at = CASE WHEN latest.done THEN NULL ELSE s.failing_notified_at END
    FROM latest
    WHERE s.id = latest.subscription_id
      AND CASE WHEN latest.done THEN s.failing_since IS NOT NULL ELSE s.failing_since IS NULL END;
END
$fn$;
