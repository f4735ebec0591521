-- The entries of a workspace in reach whose stored price is not the one the rates give now, with
-- the price they should have (`prices_in_reach`, which says which entries, and `repricing`, which
-- holds the rule). Reads only: a rate's dry run sums it, and checks read it.
--
-- The caller holds the workspace's pricing lock (pricing_lock), exclusively for a change that
-- re-prices many entries: every write of an entry takes it shared first, so nothing read here
-- changes before the caller writes it, and no row needs locking (a dry run then writes nothing).
-- PL/pgSQL planned afresh for each call (plan_cache_mode), without JIT compilation (a second of
-- start-up on a large re-pricing, for nothing on a small one): a generic plan cannot drop the
-- filters a call leaves null, and would not use the index a call's filter allows. Its rows are
-- kept in memory for the caller (work_mem), not spilled to a temporary file. (The entries a write
-- just made are priced by `price_written`, whose one filter, their ids, keeps a plan.)
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
SET work_mem = '64MB'
AS $fn$
BEGIN
    RETURN QUERY
    SELECT * FROM timetrack_code.prices_in_reach(p_workspace, p_user, p_client, p_project,
                                                 p_task, p_since, p_rate);
END
$fn$;
