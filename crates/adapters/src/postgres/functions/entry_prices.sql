-- The entries of a workspace whose stored price is not the one the rates give now (`repricing`,
-- which holds the rule), with the price they should have. Reads only; `price_entries` writes what
-- it returns, and a rate's dry run sums it. The entries are every entry of the workspace that
-- matches the filters given (a user, a client through its projects, a project, a task, a start
-- from p_since, or a rate that priced it); none given, all of them.
--
-- The caller holds the workspace's pricing lock (pricing_lock), exclusively for a change that
-- re-prices many entries: every write of an entry takes it shared first, so nothing read here
-- changes before the caller writes it, and no row needs locking (a dry run then writes nothing).
-- PL/pgSQL planned afresh for each call (plan_cache_mode), without JIT compilation (a second
-- of start-up on a large re-pricing, for nothing on a small one): a generic plan cannot drop the filters
-- a call leaves null, and would not use the index a call's filter allows. (The entries a write
-- just made are priced by `price_written`, whose one filter, their ids, keeps a plan.)
-- Opaque to the caller's planner, so `price_entries` joins its few rows to the table by key.
CREATE FUNCTION timetrack_code.entry_prices(
    p_workspace uuid,
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
    SELECT r.entry_id, r.seconds, r.old_currency, r.old_billable_minor, r.new_currency,
           r.billable_rate_id, r.billable_rate_scope, r.billable_rate_minor, r.cost_rate_id,
           r.cost_rate_scope, r.cost_rate_minor
    FROM timetrack_code.repricing(p_workspace) r
    WHERE (p_user IS NULL OR r.user_id = p_user)
      AND (p_client IS NULL OR r.client_id = p_client)
      AND (p_project IS NULL OR r.project_id = p_project)
      AND (p_task IS NULL OR r.task_id = p_task)
      AND (p_since IS NULL OR r.start_at >= p_since)
      AND (p_rate IS NULL OR r.old_billable_id = p_rate OR r.old_cost_id = p_rate);
END
$fn$;
