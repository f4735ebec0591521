-- Applies what a round changes in its subscriptions' streaks, as the domain decided it
-- (`delivery::streak::after_round`) from the streaks timetrack_code.record_attempts returned, locked,
-- in the same transaction: one row per subscription that changes, as parallel arrays. For each:
-- its new streak start (NULL: the streak ended), its failures in a row, whether what the owner
-- was told of the streak is forgotten, and, when its endpoint is back, since when
-- (`back_since`) and to when (`due_at`) its waiting retries are brought forward, at most
-- `bring_limit` of them, oldest first. The streak stays "being brought back" (recovered_at)
-- while a round brings a full `bring_limit`: there may be more.
--
-- The retries brought are those pending, due after `due_at`, last scheduled at or before
-- `back_since` (a retry scheduled by a failure after the endpoint was back, a payload that still
-- fails, is not brought again), and not held by their receiver's `Retry-After` past `due_at`.
-- A retry another transaction holds (a round or an attempt recorded alone that is writing its
-- outcome right now) is skipped, not waited for: that transaction holds its own streak lock
-- after its delivery rows, so waiting here, with this subscription's streak locked, could close a
-- cycle of waits (a deadlock), and the retry is being given its next step anyway.
-- Each subscription's walk is its own lateral subquery along its pending deliveries, and the
-- deliveries are updated by their ids as an array (an index condition on the primary key, the
-- one access path whatever the plan's estimates). Scans other than by index are off, and the
-- plan is kept for the connection, as in timetrack_code.record_attempts.
CREATE FUNCTION timetrack_code.apply_streaks(
    subscription_ids text[], streak_starts timestamptz[], streak_failures int[],
    forget_told bool[], back_since timestamptz[], due_at timestamptz[], bring_limit int)
RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    WITH c AS (
        SELECT * FROM unnest(apply_streaks.subscription_ids,
                             apply_streaks.streak_starts,
                             apply_streaks.streak_failures,
                             apply_streaks.forget_told,
                             apply_streaks.back_since,
                             apply_streaks.due_at)
            AS c(subscription_id, failing_since, failing_attempts, forget_told, back_since,
                 due_at)
    ), chosen AS MATERIALIZED (
        SELECT n.id, c.subscription_id, c.due_at
        FROM c CROSS JOIN LATERAL (
            SELECT p.id FROM deliveries p
            WHERE p.subscription_id = c.subscription_id AND p.status = 'PENDING'
              AND p.next_attempt_at > c.due_at AND p.updated_at <= c.back_since
              AND (p.not_before IS NULL OR p.not_before <= c.due_at)
            ORDER BY p.subscription_id, p.next_attempt_at
            LIMIT apply_streaks.bring_limit
            FOR UPDATE OF p SKIP LOCKED
        ) n
        WHERE c.back_since IS NOT NULL
    ), pulled AS (
        UPDATE deliveries d
        SET next_attempt_at = x.due_at, updated_at = x.due_at
        FROM chosen x
        WHERE d.id = ANY (ARRAY(SELECT id FROM chosen)) AND d.id = x.id
        RETURNING d.subscription_id
    )
    UPDATE webhook_subscriptions s
    SET failing_since = c.failing_since,
        failing_notified_at = CASE WHEN c.forget_told THEN NULL ELSE s.failing_notified_at END,
        failing_attempts = c.failing_attempts,
        recovered_at = CASE WHEN (SELECT count(*) FROM pulled p
                                  WHERE p.subscription_id = c.subscription_id)
                                 >= apply_streaks.bring_limit
                            THEN c.back_since END
    FROM c
    WHERE s.id = c.subscription_id;
END
$fn$;
