-- The entries an invoice of client :client_id bills (docs/billing.md, Invoices): of its projects
-- (or of :project_ids), stopped, billable, with a billable rate, priced in :currency, on no
-- invoice, not before the workspace's lock date, whose day in the workspace's time zone is in
-- [:from, :to]; oldest first. The create appends FOR UPDATE OF e: rows are then locked in this
-- order, so two creates never deadlock, and one that waited re-checks each row and leaves out
-- what the other took.
SELECT e.id, e.user_id, u.name AS user_name, e.project_id, p.name AS project_name,
       e.task_id, t.name AS task_name,
       (e.start_at AT TIME ZONE w.timezone)::date AS day,
       date_part('epoch', e.end_at - e.start_at)::bigint AS seconds,
       e.billable_rate_minor AS rate_minor
FROM time_entries e
JOIN workspaces w ON w.id = e.workspace_id
JOIN projects p ON p.workspace_id = e.workspace_id AND p.id = e.project_id
JOIN users u ON u.id = e.user_id
LEFT JOIN tasks t ON t.workspace_id = e.workspace_id AND t.id = e.task_id
WHERE e.workspace_id = :workspace_id AND p.client_id = :client_id
  AND (cardinality(:project_ids::uuid[]) = 0 OR e.project_id = ANY (:project_ids))
  AND e.start_at >= (:from::date::timestamp AT TIME ZONE w.timezone)
  AND e.start_at < ((:to::date + 1)::timestamp AT TIME ZONE w.timezone)
  AND e.end_at IS NOT NULL AND e.billable AND e.billable_rate_minor IS NOT NULL
  AND e.price_currency = :currency AND e.invoice_id IS NULL
  AND (w.lock_before IS NULL OR (e.start_at AT TIME ZONE w.timezone)::date >= w.lock_before)
ORDER BY e.start_at, e.id
