-- The extra lines of draft :id, to be written again.
DELETE FROM invoice_lines WHERE workspace_id = :workspace_id AND invoice_id = :id AND kind = 'extra'
