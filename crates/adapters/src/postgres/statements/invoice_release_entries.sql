-- Unlinks the entries of invoice :invoice_id (a void, or a draft's deletion): the ids released.
UPDATE time_entries SET invoice_id = NULL
WHERE workspace_id = :workspace_id AND invoice_id = :invoice_id
RETURNING id
