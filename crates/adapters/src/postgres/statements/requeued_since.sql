-- When each delivery other than an event's own (a replay, a resend, a test) was created at or
-- after `since` for the subscriptions of `user` in `workspace`, oldest first: what the quota on
-- queueing again counts. Through deliveries_requeued_idx, which holds those deliveries alone.
SELECT d.created_at
FROM webhook_subscriptions s
JOIN deliveries d ON d.subscription_id = s.id
WHERE s.workspace_id = :workspace AND s.user_id = :user
  AND d.kind <> 'event' AND d.created_at >= :since
ORDER BY d.created_at
