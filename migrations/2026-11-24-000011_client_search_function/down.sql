ALTER INDEX clients_workspace_name_trgm_idx RESET (gin_pending_list_limit);
ALTER TABLE clients ALTER COLUMN name_lower SET STATISTICS -1;
DROP FUNCTION timetrack_find_clients(uuid, text, bigint);
