-- Marks invoice :id announced overdue at :now, if it still is: issued, not yet announced, past
-- due in its workspace's time zone, something left to pay. No row when another process (or a
-- payment) came first.
UPDATE invoices i SET overdue_at = :now
FROM workspaces w
WHERE i.workspace_id = :workspace_id AND i.id = :id AND w.id = i.workspace_id
  AND i.status = 'issued' AND i.overdue_at IS NULL
  AND i.due_date < (:now::timestamptz AT TIME ZONE w.timezone)::date
  AND i.total_minor > (SELECT coalesce(sum(p.amount_minor), 0) FROM invoice_payments p
                       WHERE p.workspace_id = i.workspace_id AND p.invoice_id = i.id)
