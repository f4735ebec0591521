DROP FUNCTION timetrack_find_clients(uuid, text, bigint);
ALTER INDEX clients_workspace_name_trgm_idx RESET (fastupdate);
