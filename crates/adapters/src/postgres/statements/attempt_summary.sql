-- What a subscription's attempts and deliveries say about it. A success is an attempt recorded
-- without an error (a 2xx); every other attempt is a failure. Test deliveries' attempts do not
-- count (they say how the endpoint answers a test, not how the webhook is doing). The failure streak counts from the
-- latest success or the latest re-enable (`streak_reset_at`), whichever is later.
WITH sub AS (
    SELECT failing_since, streak_reset_at FROM webhook_subscriptions WHERE id = :id
), latest AS (
    SELECT started_at, status_code, error FROM delivery_attempts
    WHERE subscription_id = :id AND NOT is_test
    ORDER BY started_at DESC, id DESC
    LIMIT 1
), success AS (
    SELECT max(started_at) AS at FROM delivery_attempts
    WHERE subscription_id = :id AND NOT is_test AND error IS NULL
), failure AS (
    SELECT max(started_at) AS at FROM delivery_attempts
    WHERE subscription_id = :id AND NOT is_test AND error IS NOT NULL
)
SELECT (SELECT started_at FROM latest) AS last_attempt_at,
       (SELECT at FROM success) AS last_success_at,
       (SELECT at FROM failure) AS last_failure_at,
       (SELECT status_code FROM latest) AS last_status_code,
       (SELECT error FROM latest) AS last_error,
       (SELECT count(*) FROM delivery_attempts
        WHERE subscription_id = :id AND NOT is_test AND error IS NOT NULL
          AND started_at > greatest(
                  coalesce((SELECT at FROM success), '-infinity'),
                  coalesce((SELECT streak_reset_at FROM sub), '-infinity'))) AS consecutive_failures,
       (SELECT streak_reset_at FROM sub) AS streak_reset_at,
       (SELECT failing_since FROM sub) AS failing_since,
       (SELECT count(*) FROM deliveries
        WHERE subscription_id = :id AND status = 'PENDING' AND kind <> 'test')
           AS pending_deliveries
