-- The first of :project_ids that is not a project of client :client_id in :workspace_id; no row
-- if all are.
SELECT x.id FROM unnest(:project_ids::uuid[]) AS x (id)
WHERE NOT EXISTS (SELECT 1 FROM projects p
                  WHERE p.workspace_id = :workspace_id AND p.id = x.id AND p.client_id = :client_id)
LIMIT 1
