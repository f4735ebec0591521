-- Issued invoices of every workspace, not yet announced overdue, whose due date is before the
-- day :now falls on in their workspace's time zone, with something left to pay; the earliest due
-- first, at most :limit, each with its workspace.
-- (after invoice_columns.sql)
     , w.name AS workspace_name, w.timezone AS workspace_timezone,
       w.currency AS workspace_currency, w.created_at AS workspace_created_at
FROM invoices i
JOIN workspaces w ON w.id = i.workspace_id
WHERE i.status = 'issued' AND i.overdue_at IS NULL
  AND i.due_date < (:now::timestamptz AT TIME ZONE w.timezone)::date
  AND i.total_minor > (SELECT coalesce(sum(p.amount_minor), 0) FROM invoice_payments p
                       WHERE p.workspace_id = i.workspace_id AND p.invoice_id = i.id)
ORDER BY i.due_date, i.id
LIMIT :limit
