-- A page of a subscription's delivery log, newest (highest id) first: deliveries created at or
-- after `since`, of the status, event type, event and entity (the ordering key) asked for (null:
-- any), older than `before` (null: from the newest). `delivery` (null: any) selects one
-- delivery, for its detail. Only events that show to the subscription's owner
-- (functions/shows_to.sql). Each is listed, and filtered, as the type it was sent as
-- (functions/sent_type.sql, the rule the claim sends by). Each row also carries the ordering key
-- and sequence the claim gives the sender (the event's id and 0 for a delivery without).
SELECT d.id, d.event_id,
       timetrack_code.sent_type(d.kind, e.event_type, e.sent_as)
           AS event_type,
       d.kind, d.status, d.attempts, d.next_attempt_at,
       (SELECT max(a.started_at) FROM delivery_attempts a WHERE a.delivery_id = d.id)
           AS last_attempt_at,
       d.last_status_code, d.last_error, d.created_at, d.updated_at, e.body,
       coalesce(d.ordering_key, d.event_id::text) AS ordering_key,
       coalesce(d.sequence, 0) AS sequence
FROM deliveries d
JOIN events e ON e.id = d.event_id
JOIN webhook_subscriptions s ON s.id = d.subscription_id
WHERE d.subscription_id = :id
  AND timetrack_code.shows_to(e.visible_to, s.user_id)
  AND d.created_at >= :since
  AND (:delivery::bigint IS NULL OR d.id = :delivery)
  AND (:status::text IS NULL OR d.status = :status)
  AND (:event_type::text IS NULL
       OR timetrack_code.sent_type(d.kind, e.event_type, e.sent_as)
          = :event_type)
  AND (:event_id::uuid IS NULL OR d.event_id = :event_id)
  AND (:entity_id::text IS NULL OR d.ordering_key = :entity_id)
  AND (:before::bigint IS NULL OR d.id < :before)
ORDER BY d.id DESC
LIMIT :limit
