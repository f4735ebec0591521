-- The invoice (id and number) that entry :id of :workspace_id is on, if any.
SELECT i.id, i.number
FROM time_entries e
JOIN invoices i ON i.workspace_id = e.workspace_id AND i.id = e.invoice_id
WHERE e.workspace_id = :workspace_id AND e.id = :id
