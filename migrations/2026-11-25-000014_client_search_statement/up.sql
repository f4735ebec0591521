-- Client search of three characters or more: one statement the service keeps, no function.
--
-- The search now chooses between its two plans by itself, on the workspace's 500 newest names,
-- through a statement whose plan does not depend on the values (crates/adapters/src/postgres/
-- clients.rs, SEARCH_SQL). Nothing calls timetrack_find_clients any longer, and no plan depends
-- on the planner's estimate of a pattern, which the finer statistics of name_lower were for.
DROP FUNCTION timetrack_find_clients(uuid, text, bigint);
ALTER TABLE clients ALTER COLUMN name_lower SET STATISTICS -1;

-- The trigram index keys the workspace by its text form, which no other index has. The
-- statement's rare-needle branch names the workspace in that form, so the only index that can
-- narrow it is this one: a plan kept for every workspace cannot instead walk the workspace
-- through a btree index, which a plan costed for the average workspace would choose where most
-- workspaces are small (and which reads every client of a big one). Same pending list as before
-- (migration 000011).
CREATE INDEX clients_workspace_text_name_trgm_idx
    ON clients USING gin ((workspace_id::text), name_lower gin_trgm_ops)
    WITH (gin_pending_list_limit = 128);
DROP INDEX clients_workspace_name_trgm_idx;
ALTER INDEX clients_workspace_text_name_trgm_idx RENAME TO clients_workspace_name_trgm_idx;
