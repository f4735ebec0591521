-- The pricing rule, written once: every entry of a workspace whose stored price is not the one the
-- rates give now, with the price it should have — its duration so far (running ones up to now),
-- its currency and billable rate before, and its currency and both rates after — and the columns
-- a caller selects entries by (user, client, project, task, start, the rates that priced it).
-- Locked entries keep their price and are not listed: those on an invoice, and those that start
-- before the workspace's lock date (in its time zone).
--
-- The rule, also written in Rust (`pricing::choose_rate` in the domain, which the in-memory fake
-- uses; the contract tests hold both to the same answers):
--   - an entry's currency is its project's client's, or else the workspace's;
--   - its date is its start's date in the workspace's time zone;
--   - per kind, the rate is the one of the most specific level (rate_level) that has a row in
--     that currency in force on that date: the latest effective_from not after it (rate_for);
--   - a non-billable entry has no billable rate; every entry gets a cost rate.
--
-- A plain SQL function, STABLE and without SET clauses, so the planner inlines it into the
-- statement that calls it: the caller's conditions on its columns reach the scan of the entries
-- (an id, a user, a project, a start) and pick the index, as if the query were written there.
-- Its two callers: `prices_in_reach` (any filter, which `entry_prices` and `price_entries` plan
-- for each call's filters) and `price_written` (entries by id, one plan kept per connection).
CREATE FUNCTION timetrack_code.repricing(p_workspace uuid)
RETURNS TABLE (entry_id uuid, user_id uuid, client_id uuid, project_id uuid, task_id uuid,
               start_at timestamptz, old_billable_id uuid, old_cost_id uuid, seconds bigint,
               old_currency text, old_billable_minor bigint, new_currency text,
               billable_rate_id uuid, billable_rate_scope text, billable_rate_minor bigint,
               cost_rate_id uuid, cost_rate_scope text, cost_rate_minor bigint)
LANGUAGE sql STABLE
AS $fn$
    SELECT t.id, t.user_id, t.client_id, t.project_id, t.task_id, t.start_at, t.old_billable_id,
           t.old_cost_id, t.seconds, t.old_currency, t.old_billable_minor, t.currency,
           b.id, b.scope, b.hourly_minor, k.id, k.scope, k.hourly_minor
    FROM (
        SELECT e.id, e.user_id, e.project_id, e.task_id, e.billable, e.start_at, p.client_id,
               e.price_currency AS old_currency, e.billable_rate_minor AS old_billable_minor,
               e.billable_rate_id AS old_billable_id, e.cost_rate_id AS old_cost_id,
               e.cost_rate_minor AS old_cost_minor,
               extract(epoch FROM coalesce(e.end_at, now()) - e.start_at)::bigint AS seconds,
               coalesce(c.currency, w.currency) AS currency,
               (e.start_at AT TIME ZONE w.timezone)::date AS day
        FROM time_entries e
        JOIN workspaces w ON w.id = e.workspace_id
        LEFT JOIN projects p ON p.workspace_id = e.workspace_id AND p.id = e.project_id
        LEFT JOIN clients c ON c.workspace_id = p.workspace_id AND c.id = p.client_id
        WHERE e.workspace_id = p_workspace AND w.id = p_workspace
          AND e.invoice_id IS NULL
          AND (w.lock_before IS NULL OR (e.start_at AT TIME ZONE w.timezone)::date >= w.lock_before)
    ) t
    LEFT JOIN LATERAL timetrack_code.rate_for(p_workspace, 'billable', t.billable, t.currency, t.day,
                                              t.user_id, t.client_id, t.project_id, t.task_id) b
        ON true
    LEFT JOIN LATERAL timetrack_code.rate_for(p_workspace, 'cost', true, t.currency, t.day,
                                              t.user_id, t.client_id, t.project_id, t.task_id) k
        ON true
    WHERE (t.old_currency, t.old_billable_id, t.old_billable_minor, t.old_cost_id, t.old_cost_minor)
          IS DISTINCT FROM (t.currency, b.id, b.hourly_minor, k.id, k.hourly_minor)
$fn$;
