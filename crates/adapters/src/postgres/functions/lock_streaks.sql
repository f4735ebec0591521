-- The stored streaks a round of attempts may change, locked until the transaction ends: those of
-- its subscriptions (given as the round's parallel arrays `subscription_ids`, `tests`, `done`)
-- that are failing or being brought back, or that had a failure in the round. Test deliveries
-- are no part of a streak: they say how the endpoint answers a test, not how the webhook is
-- doing. The caller decides what changes (the domain's `delivery::streak`) and applies it with
-- timetrack_code.apply_streaks in the same transaction.
CREATE FUNCTION timetrack_code.lock_streaks(subscription_ids text[], tests bool[],
                                                  done bool[])
RETURNS TABLE (subscription_id text, failing_since timestamptz, failing_attempts int,
               recovered_at timestamptz)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    -- Locked in the order of their ids: rounds of several processes that
    -- share failing subscriptions then wait for each other instead of deadlocking. The lock is
    -- the one the update takes (not FOR UPDATE, which would hold up the API's writes of
    -- deliveries, whose reference checks share the row's key).
    RETURN QUERY
        SELECT s.id, s.failing_since, s.failing_attempts, s.recovered_at
        FROM webhook_subscriptions s
        WHERE s.id = ANY (ARRAY(
                  SELECT DISTINCT r.sub
                  FROM unnest(lock_streaks.subscription_ids,
                              lock_streaks.tests) AS r(sub, test)
                  WHERE NOT r.test))
          AND (s.failing_since IS NOT NULL OR s.recovered_at IS NOT NULL
               OR s.id = ANY (ARRAY(
                  SELECT r.sub
                  FROM unnest(lock_streaks.subscription_ids,
                              lock_streaks.tests,
                              lock_streaks.done) AS r(sub, test, done)
                  WHERE NOT r.test AND NOT r.done)))
        ORDER BY s.id
        FOR NO KEY UPDATE OF s;
END
$fn$;
