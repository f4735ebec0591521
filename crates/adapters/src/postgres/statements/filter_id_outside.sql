-- The first id of a subscription's filters, in the order project, client, user and then as
-- given, that is not a project, a client or a member of `workspace`, with its filter's name.
SELECT f.name, f.id
FROM (
    SELECT 'project_ids' AS name, 1 AS kind, x.id, x.n
    FROM unnest(:project_ids::uuid[]) WITH ORDINALITY AS x(id, n)
    UNION ALL
    SELECT 'client_ids', 2, x.id, x.n
    FROM unnest(:client_ids::uuid[]) WITH ORDINALITY AS x(id, n)
    UNION ALL
    SELECT 'user_ids', 3, x.id, x.n
    FROM unnest(:user_ids::uuid[]) WITH ORDINALITY AS x(id, n)
) f
WHERE NOT CASE f.kind
    WHEN 1 THEN EXISTS (SELECT 1 FROM projects p WHERE p.id = f.id AND p.workspace_id = :workspace)
    WHEN 2 THEN EXISTS (SELECT 1 FROM clients c WHERE c.id = f.id AND c.workspace_id = :workspace)
    ELSE EXISTS (SELECT 1 FROM memberships m
                 WHERE m.user_id = f.id AND m.workspace_id = :workspace)
END
ORDER BY f.kind, f.n
LIMIT 1
