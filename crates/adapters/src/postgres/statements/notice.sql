-- A notice about webhook `about`: its event, visible to the webhook's owner alone, and one
-- pending delivery for each other active subscription in the workspace that lists its type and
-- that it shows to (functions/shows_to.sql: another member never learns its URL, a capability; a
-- webhook is never told about itself). Returns one row, `queued`: the deliveries it queued.
WITH e AS (
    INSERT INTO events (id, workspace_id, event_type, body, created_at, about_webhook_id,
                        ordering_key, visible_to)
    VALUES (:id, :workspace_id, :event_type, :body, :at, :about, :about,
            (SELECT a.user_id FROM webhook_subscriptions a WHERE a.id = :about))
    RETURNING id, workspace_id, event_type, created_at, ordering_key, seq, visible_to
), d AS (
    INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at,
                            created_at, updated_at, ordering_key, sequence)
    SELECT e.id, s.id, s.workspace_id, 'PENDING', e.created_at, e.created_at, e.created_at,
           e.ordering_key, e.seq
    FROM e JOIN webhook_subscriptions s
      ON s.workspace_id = e.workspace_id AND s.status = 'ACTIVE' AND e.event_type = ANY (s.events)
     AND s.id <> :about
     AND timetrack_code.shows_to(e.visible_to, s.user_id)
    RETURNING 1
)
SELECT count(*) AS queued FROM d
