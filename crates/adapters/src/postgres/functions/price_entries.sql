-- Sets the stored price of the workspace's entries in reach whose price the rates now make
-- different (`entry_prices`, which says which entries and the rule), and returns them: their
-- duration so far and their currency and billable rate before and after, from which a caller sums
-- what the change did. The caller holds the workspace's pricing lock (pricing_lock). The update
-- joins the rows `entry_prices` returns to the table by key, one index look-up each.
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
LANGUAGE sql
SET jit = off
AS $fn$
    UPDATE time_entries e
    SET price_currency = n.new_currency,
        billable_rate_id = n.billable_rate_id, billable_rate_scope = n.billable_rate_scope,
        billable_rate_minor = n.billable_rate_minor,
        cost_rate_id = n.cost_rate_id, cost_rate_scope = n.cost_rate_scope,
        cost_rate_minor = n.cost_rate_minor
    FROM timetrack_code.entry_prices(p_workspace, p_user, p_client, p_project, p_task,
                                     p_since, p_rate) n
    WHERE e.workspace_id = p_workspace AND e.id = n.entry_id
    RETURNING e.id, n.seconds, n.old_currency, n.old_billable_minor, n.new_currency,
              n.billable_rate_minor
$fn$;
