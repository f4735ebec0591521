-- A payment of invoice :invoice_id.
INSERT INTO invoice_payments (id, workspace_id, invoice_id, amount_minor, paid_on, note, created_at)
VALUES (:id, :workspace_id, :invoice_id, :amount_minor, :paid_on, :note, :created_at)
