-- The client of a create, as a common table expression ahead of the outbox (outbox.sql): the
-- client and its events in one statement.
c AS (
    INSERT INTO clients (id, workspace_id, name, name_lower, type, status, email, phone, address,
                         note, currency, created_at, updated_at)
    VALUES (:id, :workspace_id, :name, :name_lower, :client_type, :status, :email, :phone, :address,
            :note, :currency, :created_at, :updated_at)
),
