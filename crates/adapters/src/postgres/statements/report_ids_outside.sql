-- The first id of a report's filter that is not the workspace's $1, in the order clients ($2),
-- projects ($3), tasks ($4), tags ($5), members ($6), with its parameter's name; no row if all
-- are.
SELECT name, id FROM (
    SELECT 1 AS n, 'client_ids' AS name, i AS id FROM unnest($2::uuid[]) i
    WHERE NOT EXISTS (SELECT 1 FROM clients WHERE workspace_id = $1 AND id = i)
    UNION ALL
    SELECT 2, 'project_ids', i FROM unnest($3::uuid[]) i
    WHERE NOT EXISTS (SELECT 1 FROM projects WHERE workspace_id = $1 AND id = i)
    UNION ALL
    SELECT 3, 'task_ids', i FROM unnest($4::uuid[]) i
    WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE workspace_id = $1 AND id = i)
    UNION ALL
    SELECT 4, 'tag_ids', i FROM unnest($5::uuid[]) i
    WHERE NOT EXISTS (SELECT 1 FROM tags WHERE workspace_id = $1 AND id = i)
    UNION ALL
    SELECT 5, 'user_ids', i FROM unnest($6::uuid[]) i
    WHERE NOT EXISTS (SELECT 1 FROM memberships WHERE workspace_id = $1 AND user_id = i)
) outside
ORDER BY n
LIMIT 1
