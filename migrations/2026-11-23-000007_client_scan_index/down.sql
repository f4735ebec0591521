DROP INDEX clients_workspace_created_idx;
CREATE INDEX clients_workspace_created_idx ON clients (workspace_id, created_at DESC, id DESC);
