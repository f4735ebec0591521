-- The events a replay would queue for subscription `id`, oldest first, at most `limit`: those of
-- its workspace recorded in [since, until) of a type it lists now, passing its filters now, not
-- about itself, showing to its owner (functions/shows_to.sql) and one its owner may receive
-- (functions/receives.sql); with
-- `only_failed`, only those recorded since it was created that it has no delivered or pending
-- delivery of.
-- `e.seq > 0` holds for every event: it lets this query use the workspace's partial index, which
-- no reference check can (the baseline migration's header).
SELECT e.id, e.created_at
FROM webhook_subscriptions s
JOIN events e ON e.workspace_id = s.workspace_id
WHERE s.id = :id
  AND e.created_at >= :since AND e.created_at < :until AND e.seq > 0
  AND e.event_type = ANY (s.events)
  AND e.about_webhook_id IS DISTINCT FROM s.id
  AND timetrack_code.shows_to(e.visible_to, s.user_id)
  AND timetrack_code.receives(e.event_type, s.workspace_id, s.user_id)
  AND (s.filter_project_ids IS NULL OR e.project_id = ANY (s.filter_project_ids))
  AND (s.filter_client_ids IS NULL OR e.client_id = ANY (s.filter_client_ids))
  AND (s.filter_user_ids IS NULL OR e.user_id = ANY (s.filter_user_ids))
  AND (s.filter_billable IS NULL OR e.billable = s.filter_billable)
  AND (NOT :only_failed OR e.created_at >= s.created_at)
  AND (NOT :only_failed OR NOT EXISTS (
          SELECT 1 FROM deliveries d
          WHERE d.event_id = e.id AND d.subscription_id = s.id
            AND d.status IN ('DELIVERED', 'PENDING')))
ORDER BY e.created_at, e.id
LIMIT :limit
