-- Issues draft :id as :number with its dates, and copies the issuer's and the client's names as
-- they are now (a deleted client keeps the names copied at the create).
UPDATE invoices i
SET number = :number, status = 'issued', issue_date = :issue_date, due_date = :due_date,
    issued_at = :at,
    issuer_name = (SELECT w.name FROM workspaces w WHERE w.id = i.workspace_id),
    client_name = coalesce(c.name, i.client_name),
    client_address = CASE WHEN c.found THEN c.address ELSE i.client_address END
FROM (SELECT bool_or(true) AS found, max(name) AS name, max(address) AS address
      FROM clients WHERE workspace_id = :workspace_id AND id = :client_id) c
WHERE i.workspace_id = :workspace_id AND i.id = :id
