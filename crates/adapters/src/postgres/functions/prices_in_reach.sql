-- The entries in reach whose stored price is not the one the rates give now: `repricing` (which
-- holds the rule) narrowed to the entries that match the filters given — a user, a client through
-- its projects, a project, a task, a start from p_since, or a rate that priced them; none given,
-- every entry of the workspace. Written once for its two callers, the dry run (`entry_prices`)
-- and the write (`price_entries`).
--
-- A plain SQL function, STABLE and without SET clauses, so the planner inlines it, and the
-- filters with it: both callers plan each call for the values given (plan_cache_mode), so a
-- filter left null is dropped before planning and a filter given reaches the entries' scan and
-- picks its index.
CREATE FUNCTION timetrack_code.prices_in_reach(
    p_workspace uuid,
    p_user      uuid,
    p_client    uuid,
    p_project   uuid,
    p_task      uuid,
    p_since     timestamptz,
    p_rate      uuid)
RETURNS TABLE (entry_id uuid, seconds bigint, old_currency text, old_billable_minor bigint,
               new_currency text, billable_rate_id uuid, billable_rate_scope text,
               billable_rate_minor bigint, cost_rate_id uuid, cost_rate_scope text,
               cost_rate_minor bigint)
LANGUAGE sql STABLE
AS $fn$
    SELECT r.entry_id, r.seconds, r.old_currency, r.old_billable_minor, r.new_currency,
           r.billable_rate_id, r.billable_rate_scope, r.billable_rate_minor, r.cost_rate_id,
           r.cost_rate_scope, r.cost_rate_minor
    FROM timetrack_code.repricing(p_workspace) r
    WHERE (p_user IS NULL OR r.user_id = p_user)
      AND (p_client IS NULL OR r.client_id = p_client)
      AND (p_project IS NULL OR r.project_id = p_project)
      AND (p_task IS NULL OR r.task_id = p_task)
      AND (p_since IS NULL OR r.start_at >= p_since)
      AND (p_rate IS NULL OR r.old_billable_id = p_rate OR r.old_cost_id = p_rate)
$fn$;
