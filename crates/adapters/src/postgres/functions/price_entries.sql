-- Sets the stored price of the workspace's entries in reach whose price the rates now make
-- different (`prices_in_reach`, which says which entries, and `repricing`, which holds the rule),
-- and returns them: their duration so far and their currency and billable rate before and after,
-- from which a caller sums what the change did. The caller holds the workspace's pricing lock
-- (pricing_lock).
--
-- One statement, planned for each call's filters like `entry_prices`: the entries are read once,
-- priced, and each joined to its row by key (the unique index on workspace and id) to be written.
-- The planner is told that pages are in memory or on a solid-state disk (random_page_cost 1.1,
-- PostgreSQL's default of 4 is for spinning disks): with the default, it sometimes chose to read
-- every entry of the workspace into a hash to find the 80,000 a rate reaches, 0.8 s more.
-- The price columns are in no index and the table keeps a fifth of each page free (the
-- baseline's time_entries), so a new price is written beside the old one on its page, without a
-- new entry in any index (a HOT update): a rate reaching 80,000 entries wrote ten times the WAL
-- when every index got each new row version (ADR 0025).
CREATE FUNCTION timetrack_code.price_entries(
    p_workspace uuid,
    p_user      uuid        DEFAULT NULL,
    p_client    uuid        DEFAULT NULL,
    p_project   uuid        DEFAULT NULL,
    p_task      uuid        DEFAULT NULL,
    p_since     timestamptz DEFAULT NULL,
    p_rate      uuid        DEFAULT NULL)
RETURNS TABLE (entry_id uuid, seconds bigint, old_currency text, old_billable_minor bigint,
               new_currency text, new_billable_minor bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET jit = off
SET work_mem = '64MB'
SET random_page_cost = 1.1
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH written AS (
        UPDATE time_entries e
        SET price_currency = n.new_currency,
            billable_rate_id = n.billable_rate_id, billable_rate_scope = n.billable_rate_scope,
            billable_rate_minor = n.billable_rate_minor,
            cost_rate_id = n.cost_rate_id, cost_rate_scope = n.cost_rate_scope,
            cost_rate_minor = n.cost_rate_minor
        FROM timetrack_code.prices_in_reach(p_workspace, p_user, p_client, p_project, p_task,
                                            p_since, p_rate) n
        WHERE e.workspace_id = p_workspace AND e.id = n.entry_id
        RETURNING e.id, n.seconds, n.old_currency, n.old_billable_minor, n.new_currency,
                  n.billable_rate_minor)
    SELECT * FROM written;
END
$fn$;
