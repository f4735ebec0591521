-- Newest-first listing and search inside one workspace, now carrying the lowercased name.
--
-- A one- or two-character search has no trigram to look up, so it walks the workspace newest
-- first until it has its matches; a miss walks every client of the workspace. With the name in
-- the index that walk is an index-only scan (about a tenth of the pages of the table, read in
-- order) instead of one heap fetch per client, and only the matching rows are fetched.
CREATE INDEX clients_workspace_created_name_idx
    ON clients (workspace_id, created_at DESC, id DESC) INCLUDE (name_lower);
DROP INDEX clients_workspace_created_idx;
ALTER INDEX clients_workspace_created_name_idx RENAME TO clients_workspace_created_idx;
