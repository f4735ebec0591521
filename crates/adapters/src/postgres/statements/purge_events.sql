-- At most `batch` events older than `cutoff` that no pending delivery still needs and that no
-- delivery made within the retention period (a replay or a resend of an old event) shows.
DELETE FROM events WHERE id IN (
    SELECT e.id FROM events e
    WHERE e.created_at < :cutoff
      AND NOT EXISTS (SELECT 1 FROM deliveries d
                      WHERE d.event_id = e.id
                        AND (d.status = 'PENDING' OR d.created_at >= :cutoff))
    LIMIT :batch
)
