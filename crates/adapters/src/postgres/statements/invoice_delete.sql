-- Deletes draft :id with its lines (its entries released before).
DELETE FROM invoices WHERE workspace_id = :workspace_id AND id = :id
