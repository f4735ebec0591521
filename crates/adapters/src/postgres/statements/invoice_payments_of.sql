-- The payments of the invoices :invoice_ids, oldest first.
SELECT invoice_id, id, amount_minor, paid_on, note, created_at
FROM invoice_payments
WHERE workspace_id = :workspace_id AND invoice_id = ANY (:invoice_ids)
ORDER BY invoice_id, created_at, id
