-- The entries of a workspace whose stored price is not the one the rates give now, with the price
-- they should have: their duration so far (running ones up to now), their currency and billable
-- rate before, and their currency and both rates after. Reads only; `price_entries` writes what
-- it returns, and a rate's dry run sums it. The entries are those named in p_entries, or else
-- every entry of the workspace that matches the other filters given (a user, a client through
-- its projects, a project, a task, a start from p_since, or a rate that priced it). Locked
-- entries keep their price: those on an invoice, and those that start before the workspace's
-- lock date (in its time zone).
--
-- The rule, also written in Rust (`pricing::choose_rate` in the domain, which the in-memory fake
-- uses; the contract tests hold both to the same answers):
--   - an entry's currency is its project's client's, or else the workspace's;
--   - its date is its start's date in the workspace's time zone;
--   - per kind, the rate is the one of the most specific level (rate_level) that has a row in
--     that currency in force on that date: the latest effective_from not after it;
--   - a non-billable entry has no billable rate; every entry gets a cost rate.
--
-- The caller holds the workspace's pricing lock (pricing_lock), exclusively for a change that
-- re-prices many entries: every write of an entry takes it shared first, so nothing read here
-- changes before the caller writes it, and no row needs locking (a dry run then writes nothing).
-- PL/pgSQL planned afresh for each call (plan_cache_mode), without JIT compilation (a second
-- of start-up on a large re-pricing, for nothing on a small one): a generic plan cannot drop the filters
-- a call leaves null, and would scan the workspace's entries for the one entry a write prices.
-- Opaque to the caller's planner, so `price_entries` joins its few rows to the table by key.
CREATE FUNCTION timetrack_code.entry_prices(
    p_workspace uuid,
    p_entries   uuid[]      DEFAULT NULL,
    p_user      uuid        DEFAULT NULL,
    p_client    uuid        DEFAULT NULL,
    p_project   uuid        DEFAULT NULL,
    p_task      uuid        DEFAULT NULL,
    p_since     timestamptz DEFAULT NULL,
    p_rate      uuid        DEFAULT NULL)
RETURNS TABLE (entry_id uuid, seconds bigint, old_currency text, old_billable_minor bigint,
               new_currency text, billable_rate_id uuid, billable_rate_scope text,
               billable_rate_minor bigint, cost_rate_id uuid, cost_rate_scope text,
               cost_rate_minor bigint)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_custom_plan
SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH ws AS (
        SELECT w.id, w.timezone, w.currency, w.lock_before FROM workspaces w WHERE w.id = p_workspace
    ), target AS (
        SELECT e.id, e.user_id, e.project_id, e.task_id, e.billable, p.client_id,
               e.price_currency AS old_currency, e.billable_rate_minor AS old_billable_minor,
               e.billable_rate_id AS old_billable_id, e.cost_rate_id AS old_cost_id,
               e.cost_rate_minor AS old_cost_minor,
               extract(epoch FROM coalesce(e.end_at, now()) - e.start_at)::bigint AS seconds,
               coalesce(c.currency, ws.currency) AS currency,
               (e.start_at AT TIME ZONE ws.timezone)::date AS day
        FROM time_entries e
        CROSS JOIN ws
        LEFT JOIN projects p ON p.workspace_id = e.workspace_id AND p.id = e.project_id
        LEFT JOIN clients c ON c.workspace_id = p.workspace_id AND c.id = p.client_id
        WHERE e.workspace_id = p_workspace
          AND (p_entries IS NULL OR e.id = ANY (p_entries))
          AND (p_user IS NULL OR e.user_id = p_user)
          AND (p_client IS NULL OR p.client_id = p_client)
          AND (p_project IS NULL OR e.project_id = p_project)
          AND (p_task IS NULL OR e.task_id = p_task)
          AND (p_since IS NULL OR e.start_at >= p_since)
          AND (p_rate IS NULL OR e.billable_rate_id = p_rate OR e.cost_rate_id = p_rate)
          AND e.invoice_id IS NULL
          AND (ws.lock_before IS NULL OR (e.start_at AT TIME ZONE ws.timezone)::date >= ws.lock_before)
    ), priced AS (
        SELECT t.id, t.currency, t.seconds, t.old_currency, t.old_billable_minor,
               t.old_billable_id, t.old_cost_id, t.old_cost_minor,
               b.id AS b_id, b.scope AS b_scope, b.hourly_minor AS b_minor,
               k.id AS k_id, k.scope AS k_scope, k.hourly_minor AS k_minor
        FROM target t
        LEFT JOIN LATERAL (
            SELECT r.id, r.scope, r.hourly_minor FROM rates r
            WHERE t.billable AND r.workspace_id = p_workspace AND r.kind = 'billable'
              AND r.currency = t.currency AND r.effective_from <= t.day
              AND CASE r.scope
                    WHEN 'project_member' THEN r.project_id = t.project_id AND r.user_id = t.user_id
                    WHEN 'task' THEN r.task_id = t.task_id
                    WHEN 'project' THEN r.project_id = t.project_id
                    WHEN 'client' THEN r.client_id = t.client_id
                    WHEN 'member' THEN r.user_id = t.user_id
                    ELSE true END
            ORDER BY timetrack_code.rate_level(r.scope), r.effective_from DESC
            LIMIT 1
        ) b ON true
        LEFT JOIN LATERAL (
            SELECT r.id, r.scope, r.hourly_minor FROM rates r
            WHERE r.workspace_id = p_workspace AND r.kind = 'cost'
              AND r.currency = t.currency AND r.effective_from <= t.day
              AND CASE r.scope
                    WHEN 'project_member' THEN r.project_id = t.project_id AND r.user_id = t.user_id
                    WHEN 'task' THEN r.task_id = t.task_id
                    WHEN 'project' THEN r.project_id = t.project_id
                    WHEN 'client' THEN r.client_id = t.client_id
                    WHEN 'member' THEN r.user_id = t.user_id
                    ELSE true END
            ORDER BY timetrack_code.rate_level(r.scope), r.effective_from DESC
            LIMIT 1
        ) k ON true
    )
    SELECT p.id, p.seconds, p.old_currency, p.old_billable_minor, p.currency, p.b_id, p.b_scope,
           p.b_minor, p.k_id, p.k_scope, p.k_minor
    FROM priced p
    WHERE (p.old_currency, p.old_billable_id, p.old_billable_minor, p.old_cost_id, p.old_cost_minor)
          IS DISTINCT FROM (p.currency, p.b_id, p.b_minor, p.k_id, p.k_minor);
END
$fn$;
