-- Invoice :id of :workspace_id (after invoice_columns.sql).
FROM invoices i
WHERE i.workspace_id = :workspace_id AND i.id = :id
