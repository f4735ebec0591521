-- Advances invoice :id to version :at if it is still version :before (the conditional write
-- every change of an invoice starts with); no row otherwise.
UPDATE invoices SET updated_at = :at
WHERE workspace_id = :workspace_id AND id = :id AND updated_at = :before
