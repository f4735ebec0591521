-- The reports dataset: one workspace ($1, zone Europe/Berlin, EUR) of 50 members, 10 clients
-- (two billing in USD), 40 projects of 4 tasks each, 12 tags, workspace rates (billable and cost,
-- in both currencies), and $2 stopped entries spread evenly over the two years 2025 and 2026 (in
-- working hours), a third of them tagged, four in five billable, one in four entered by hand,
-- each with the price those rates give it (the workload checks it is what the service would
-- store). Deterministic: the same ids and figures every run. $1, $2 and $3 (the version of this
-- text, which names the workspace) are written in by the tool.
INSERT INTO workspaces (id, name, created_at, timezone, currency)
VALUES ($1, 'Reports bench ' || '$3', now(), 'Europe/Berlin', 'EUR');

INSERT INTO users (id, name, email, created_at)
SELECT md5($1::text || 'user' || i)::uuid, 'Member ' || i, 'member' || i || '@' || $1::text || '.bench',
       now()
FROM generate_series(1, 50) i
ON CONFLICT (id) DO NOTHING;

INSERT INTO memberships (workspace_id, user_id, created_at, role)
SELECT $1, md5($1::text || 'user' || i)::uuid, now() + i * interval '1 ms',
       CASE WHEN i = 1 THEN 'owner' WHEN i <= 3 THEN 'admin' ELSE 'member' END
FROM generate_series(1, 50) i;

INSERT INTO clients (id, workspace_id, name, name_lower, type, status, currency, created_at, updated_at)
SELECT md5($1::text || 'client' || i)::uuid, $1, 'Client ' || i, 'client ' || i, 'company', 'active',
       CASE WHEN i <= 2 THEN 'USD' ELSE 'EUR' END, now(), now()
FROM generate_series(1, 10) i;

INSERT INTO projects (id, workspace_id, client_id, name, created_at, updated_at)
SELECT md5($1::text || 'project' || i)::uuid, $1, md5($1::text || 'client' || (1 + i % 10))::uuid,
       'Project ' || i, now(), now()
FROM generate_series(1, 40) i;

INSERT INTO tasks (id, workspace_id, project_id, name, created_at, updated_at)
SELECT md5($1::text || 'task' || p || '-' || t)::uuid, $1, md5($1::text || 'project' || p)::uuid,
       'Task ' || t, now(), now()
FROM generate_series(1, 40) p, generate_series(1, 4) t;

INSERT INTO tags (id, workspace_id, name, name_lower, created_at)
SELECT md5($1::text || 'tag' || i)::uuid, $1, 'Tag ' || i, 'tag ' || i, now()
FROM generate_series(1, 12) i;

INSERT INTO rates (id, workspace_id, kind, scope, currency, hourly_minor, effective_from, created_at)
SELECT md5($1::text || 'rate' || kind || currency)::uuid, $1, kind, 'workspace', currency, minor,
       '2020-01-01', now()
FROM (VALUES ('billable', 'EUR', 9000), ('billable', 'USD', 11000),
             ('cost', 'EUR', 5000), ('cost', 'USD', 5500)) r(kind, currency, minor);

-- Entry n: member m = n % 50, project 1 + (7m + n / 5000) % 40, task 1 + n % 4; starts advance
-- evenly over the two years, from 08:00 Berlin time plus up to ten hours, and last 5 to 125
-- minutes. As in a team's workspace, the members work on different projects at the same time
-- (each moves to the next project every 5,000 entries, about three and a half days), so every
-- page of the table holds entries of most projects, written in the order they start.
-- Project i belongs to client 1 + i % 10; clients 1 and 2 bill in USD. Ids are UUIDv7 of the
-- entry's start, as the service makes them (time-ordered), with the rest from the entry's number.
INSERT INTO time_entries (id, workspace_id, user_id, source, description, project_id, task_id,
                          billable, start_at, end_at, created_at, updated_at, price_currency,
                          billable_rate_id, billable_rate_scope, billable_rate_minor,
                          cost_rate_id, cost_rate_scope, cost_rate_minor)
SELECT (lpad(to_hex((extract(epoch FROM s) * 1000)::bigint), 12, '0') || '7'
        || substr(md5($1::text || 'entry' || n), 1, 3) || '8'
        || substr(md5($1::text || 'entry' || n), 4, 15))::uuid,
       $1, md5($1::text || 'user' || (1 + n % 50))::uuid,
       CASE WHEN n % 4 = 0 THEN 'manual' ELSE 'timer' END, 'Work item ' || (n % 997),
       md5($1::text || 'project' || project)::uuid,
       md5($1::text || 'task' || project || '-' || (1 + n % 4))::uuid,
       billable, s, s + (300 + (n * 7919) % 7200) * interval '1 second', s, s, currency,
       CASE WHEN billable THEN md5($1::text || 'ratebillable' || currency)::uuid END,
       CASE WHEN billable THEN 'workspace' END,
       CASE WHEN billable THEN CASE currency WHEN 'USD' THEN 11000 ELSE 9000 END END,
       md5($1::text || 'ratecost' || currency)::uuid, 'workspace',
       CASE currency WHEN 'USD' THEN 5500 ELSE 5000 END
FROM (
    SELECT n, project, n % 5 <> 0 AS billable,
           CASE WHEN project % 10 IN (0, 1) THEN 'USD' ELSE 'EUR' END AS currency,
           (timestamp '2025-01-01 08:00' + (n * 730 / $2) * interval '1 day'
            + ((n * 104729) % 36000) * interval '1 second') AT TIME ZONE 'Europe/Berlin' AS s
    FROM generate_series(0::bigint, $2 - 1) n,
         LATERAL (SELECT 1 + ((n % 50) * 7 + n / 5000) % 40 AS project) p
) e;

-- Every third entry (in start order) gets a tag.
INSERT INTO time_entry_tags (workspace_id, time_entry_id, tag_id)
SELECT $1, e.id, md5($1::text || 'tag' || (1 + e.k % 12))::uuid
FROM (SELECT id, row_number() OVER (ORDER BY start_at, id) - 1 AS k
      FROM time_entries WHERE workspace_id = $1) e
WHERE e.k % 3 = 0;
