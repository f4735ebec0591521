-- The lines of the invoices :invoice_ids, in order.
SELECT invoice_id, id, kind, description, quantity_milli, unit_price_minor, amount_minor,
       entry_ids
FROM invoice_lines
WHERE workspace_id = :workspace_id AND invoice_id = ANY (:invoice_ids)
ORDER BY invoice_id, position
