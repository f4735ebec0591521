-- The rate of kind p_kind an entry gets (none when p_applies is false): of the workspace's rates
-- in the entry's currency in force on its day (the latest effective_from not after it), the one
-- of the most specific level (rate_level) whose target is the entry's. The precedence half of the
-- pricing rule (`repricing` holds the rest); the domain's `choose_rate` states it in Rust. A plain
-- SQL function, STABLE and without SET clauses, so the planner inlines it as the lateral
-- subquery it is, one index look-up per entry and kind.
CREATE FUNCTION timetrack_code.rate_for(
    p_workspace uuid, p_kind text, p_applies boolean, p_currency text, p_day date,
    p_user uuid, p_client uuid, p_project uuid, p_task uuid)
RETURNS TABLE (id uuid, scope text, hourly_minor bigint)
LANGUAGE sql STABLE
AS $fn$
    SELECT r.id, r.scope, r.hourly_minor FROM rates r
    WHERE p_applies AND r.workspace_id = p_workspace AND r.kind = p_kind
      AND r.currency = p_currency AND r.effective_from <= p_day
      AND CASE r.scope
            WHEN 'project_member' THEN r.project_id = p_project AND r.user_id = p_user
            WHEN 'task' THEN r.task_id = p_task
            WHEN 'project' THEN r.project_id = p_project
            WHEN 'client' THEN r.client_id = p_client
            WHEN 'member' THEN r.user_id = p_user
            ELSE true END
    ORDER BY timetrack_code.rate_level(r.scope), r.effective_from DESC
    LIMIT 1
$fn$;
