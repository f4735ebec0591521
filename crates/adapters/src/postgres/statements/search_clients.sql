-- The client search of three characters or more; see `SEARCH_SQL` in clients.rs for how it
-- chooses its plan.
WITH newest AS MATERIALIZED (
    SELECT count(*) < 500
        OR count(*) FILTER (WHERE strpos(name_lower, (SELECT :needle::text)) > 0) * 20
           >= (SELECT :limit::bigint) AS walk
    FROM (SELECT name_lower FROM clients WHERE workspace_id = (SELECT :workspace_id::uuid)
          ORDER BY created_at DESC, id DESC LIMIT 500) AS sample),
rare AS MATERIALIZED (
    SELECT * FROM clients
    WHERE workspace_id::text = (SELECT :workspace_id::uuid::text) AND name_lower LIKE (SELECT :pattern::text)
      AND NOT (SELECT walk FROM newest))
SELECT id, workspace_id, name, name_lower, type, status, email, phone, address, note, currency,
       created_at, updated_at
FROM ((SELECT * FROM clients
       WHERE workspace_id = (SELECT :workspace_id::uuid) AND strpos(name_lower, (SELECT :needle::text)) > 0
         AND (SELECT walk FROM newest)
       ORDER BY created_at DESC, id DESC LIMIT (SELECT :limit::bigint))
      UNION ALL
      (SELECT * FROM rare ORDER BY created_at DESC, id DESC LIMIT (SELECT :limit::bigint))) AS found
ORDER BY created_at DESC, id DESC
