-- Payment :id of invoice :invoice_id.
DELETE FROM invoice_payments
WHERE workspace_id = :workspace_id AND invoice_id = :invoice_id AND id = :id
