-- New pending deliveries of the events `event_ids` to subscription `id`, of kind `kind`, due and
-- created at `at`, in the order given, each with its event's ordering key and sequence; an event
-- that does not show to the subscription's owner (functions/shows_to.sql), or that the owner may
-- not receive (functions/receives.sql), is never queued, by
-- whichever path asks (replay, resend, test). Returns their ids.
INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at,
                        created_at, updated_at, kind, ordering_key, sequence)
SELECT x.event_id, s.id, s.workspace_id, 'PENDING', :at, :at, :at, :kind, e.ordering_key, e.seq
FROM unnest(:event_ids::uuid[]) WITH ORDINALITY AS x(event_id, n)
JOIN events e ON e.id = x.event_id
JOIN webhook_subscriptions s ON s.id = :id
WHERE timetrack_code.shows_to(e.visible_to, s.user_id)
  AND timetrack_code.receives(e.event_type, s.workspace_id, s.user_id)
ORDER BY x.n
RETURNING id
