-- Records a round of attempts that neither end nor disable their subscription, given as parallel
-- arrays: the attempt rows, the deliveries' new states (unless cancelled meanwhile), their leases
-- freed. What the round changes in its subscriptions' streaks is decided apart (see
-- timetrack_code.lock_streaks).
--
-- Each delivery is found by its primary key whatever the statistics say: the ids are also
-- given as an index condition (`d.id = ANY (delivery_ids)`), so that even a plan that drives the
-- join from deliveries (one made while the queue held a row or two, then kept for the
-- connection) reads only the batch's rows. Sequential scans, hash and merge joins are off for
-- the same reason, and bitmap scans, and JIT too (a few hundred rows never repay compiling). The
-- plan is kept for the connection: with one access path per step it cannot go wrong, and
-- planning the statement on each call was half its cost.
CREATE FUNCTION timetrack_code.record_attempts(
    delivery_ids bigint[], subscription_ids text[], attempt_numbers int[],
    started timestamptz[], latency_ms int[], codes int[], errors text[], excerpts text[], statuses text[],
    next_at timestamptz[], finished timestamptz[], done bool[], tests bool[],
    workspace_ids uuid[], not_before timestamptz[], lossy bool[], signatures text[],
    custom_headers text[])
RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    WITH r AS (
        -- The parameters are named with the function's name: a bare name that is also a
        -- column's would be taken for the column.
        SELECT * FROM unnest(record_attempts.delivery_ids,
                             record_attempts.subscription_ids,
                             record_attempts.attempt_numbers,
                             record_attempts.started,
                             record_attempts.latency_ms,
                             record_attempts.codes,
                             record_attempts.errors,
                             record_attempts.excerpts,
                             record_attempts.statuses,
                             record_attempts.next_at,
                             record_attempts.finished,
                             record_attempts.done,
                             record_attempts.tests,
                             record_attempts.workspace_ids,
                             record_attempts.not_before,
                             record_attempts.lossy,
                             record_attempts.signatures,
                             record_attempts.custom_headers)
            AS r(delivery_id, subscription_id, attempt, started_at, latency_ms, status_code, error,
                 excerpt, status, next_at, finished, done, test, workspace_id, not_before,
                 lossy, signature, custom_headers)
    ), attempt AS (
        -- An attempt is its delivery's workspace's, which the worker took with the claim (workspace_ids):
        -- looking it up here read every delivery of the batch twice. The reference to the
        -- delivery, which includes the workspace, refuses a wrong one. A claimed delivery is
        -- pending, so it outlives the attempt: the purge keeps every event a pending delivery
        -- or one made within the retention period needs.
        INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt,
                                       started_at, latency_ms, status_code, error,
                                       response_excerpt, response_excerpt_lossy, is_test,
                                       signature, custom_headers)
        SELECT r.workspace_id, r.delivery_id, r.subscription_id, r.attempt, r.started_at,
               r.latency_ms, r.status_code, r.error, r.excerpt, r.lossy, r.test, r.signature,
               r.custom_headers
        FROM r
        ON CONFLICT (delivery_id, attempt, workspace_id) DO NOTHING
    ), delivery AS (
        UPDATE deliveries d
        SET status = r.status, attempts = r.attempt, next_attempt_at = r.next_at,
            last_status_code = r.status_code, last_error = r.error,
            updated_at = r.finished, not_before = r.not_before
        FROM r
        WHERE d.id = ANY (record_attempts.delivery_ids) AND d.id = r.delivery_id
          AND d.workspace_id = r.workspace_id
          -- Unless cancelled meanwhile. Written so that it cannot match the partial indexes of
          -- pending deliveries: with statistics saying none is pending, the planner scanned one
          -- of them whole, for every batch, instead of finding each row by its key.
          AND d.status IS NOT DISTINCT FROM 'PENDING'
        RETURNING d.id
    )
    -- Their leases end (those of deliveries cancelled meanwhile were deleted with them), once
    -- the update holds their rows. A claim of another process whose snapshot is older than a
    -- lease can lock its delivery's row (it is not rewritten by the claim), then finds the lease
    -- with its insert and leaves the row; deleting the lease first would have that claim wait
    -- for this round (the deleted lease) while this round waits for its row lock: a deadlock.
    DELETE FROM delivery_leases l WHERE l.delivery_id = ANY (ARRAY(SELECT id FROM delivery));
END
$fn$;
