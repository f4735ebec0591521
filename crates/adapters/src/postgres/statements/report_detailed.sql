-- After report_base.sql: a page of its entries, oldest start first, after ($14 start, $15 id)
-- when given, at most $16, with the names of what each refers to. The page is taken first; the
-- names and the tags are then joined to its rows by hashing, the tags read for the page's ids in
-- one index scan (a look-up per row cost several times the rest of the page). Both are
-- MATERIALIZED, computed once: on a table without statistics yet (entries just imported, before
-- autovacuum's ANALYZE) the planner takes the page for one row and would otherwise run the tags'
-- aggregate again for every row of the page (34 s for a page of 5,000 instead of 0.5 s).
, page AS MATERIALIZED (
    SELECT x.id, x.day, x.start_at, x.end_at, x.seconds, x.rounded, x.description, x.billable,
           x.user_id, x.client_id, x.project_id, x.task_id, x.currency,
           x.billable_rate_minor, x.bill, x.cost_rate_minor, x.cost
    FROM priced x
    WHERE $14::timestamptz IS NULL OR (x.start_at, x.id) > ($14, $15::uuid)
    ORDER BY x.start_at, x.id
    LIMIT $16
), page_tags AS MATERIALIZED (
    SELECT tt.time_entry_id,
           array_agg(g.id::text ORDER BY g.name, g.id) AS ids,
           array_agg(g.name ORDER BY g.name, g.id) AS names
    FROM time_entry_tags tt JOIN tags g ON g.workspace_id = tt.workspace_id AND g.id = tt.tag_id
    WHERE tt.workspace_id = $1 AND tt.time_entry_id = ANY (ARRAY(SELECT id FROM page))
    GROUP BY tt.time_entry_id
)
SELECT x.id, x.day, x.start_at, x.end_at, x.seconds, x.rounded, x.description, x.billable,
       x.user_id, u.name AS user_name,
       x.client_id, c.name AS client_name,
       x.project_id, p.name AS project_name,
       x.task_id, t.name AS task_name,
       coalesce(tags.ids, '{}') AS tag_ids, coalesce(tags.names, '{}') AS tag_names,
       x.currency, x.billable_rate_minor, x.bill, x.cost_rate_minor, x.cost
FROM page x
JOIN users u ON u.id = x.user_id
LEFT JOIN clients c ON c.workspace_id = $1 AND c.id = x.client_id
LEFT JOIN projects p ON p.workspace_id = $1 AND p.id = x.project_id
LEFT JOIN tasks t ON t.workspace_id = $1 AND t.id = x.task_id
LEFT JOIN page_tags tags ON tags.time_entry_id = x.id
ORDER BY x.start_at, x.id
