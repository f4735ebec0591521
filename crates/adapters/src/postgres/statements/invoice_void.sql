-- Voids invoice :id with its reason.
UPDATE invoices SET status = 'void', void_reason = :reason, voided_at = :at
WHERE workspace_id = :workspace_id AND id = :id
