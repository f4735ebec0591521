CREATE INDEX clients_workspace_uuid_name_trgm_idx
    ON clients USING gin (workspace_id, name_lower gin_trgm_ops)
    WITH (gin_pending_list_limit = 128);
DROP INDEX clients_workspace_name_trgm_idx;
ALTER INDEX clients_workspace_uuid_name_trgm_idx RENAME TO clients_workspace_name_trgm_idx;
ALTER TABLE clients ALTER COLUMN name_lower SET STATISTICS 500;
CREATE FUNCTION timetrack_find_clients(p_workspace uuid, p_pattern text, p_limit bigint)
RETURNS SETOF clients
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_custom_plan
AS $fn$
BEGIN
    RETURN QUERY
        SELECT * FROM clients
        WHERE workspace_id = p_workspace AND name_lower LIKE p_pattern
        ORDER BY created_at DESC, id DESC
        LIMIT p_limit;
END
$fn$;
