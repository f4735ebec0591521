-- The deliveries of one event to one member's subscriptions that are not deleted, newest first,
-- each with its subscription: the event's fate across the member's webhooks. The event is read
-- through its primary key and its deliveries through deliveries_event_idx. Each is listed as the
-- type it was sent as (functions/sent_type.sql), as in the delivery log
-- (statements/delivery_log.sql, whose columns these are).
SELECT d.id, d.event_id,
       timetrack_code.sent_type(d.kind, e.event_type, e.sent_as)
           AS event_type,
       d.kind, d.status, d.attempts, d.next_attempt_at,
       (SELECT max(a.started_at) FROM delivery_attempts a WHERE a.delivery_id = d.id)
           AS last_attempt_at,
       d.last_status_code, d.last_error, d.created_at, d.updated_at, e.body,
       coalesce(d.ordering_key, d.event_id::text) AS ordering_key,
       coalesce(d.sequence, 0) AS sequence,
       s.id AS subscription_id
FROM events e
JOIN deliveries d ON d.event_id = e.id
JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE e.id = :event
  AND e.workspace_id = :workspace
  AND s.user_id = :user
  AND s.status <> 'DELETED'
ORDER BY d.id DESC
LIMIT :limit
