-- Sums a workspace's stopped entries afresh, with the same buckets: after its zone or rounding
-- changed, and for every workspace when the text of the rule that sums them changed (functions.rs
-- installs the new text and calls this in the same transaction).
CREATE FUNCTION timetrack_code.report_day_totals_rebuild(p_workspace uuid)
RETURNS void
LANGUAGE plpgsql
SET work_mem = '64MB'
SET jit = off
AS $fn$
BEGIN
    DELETE FROM report_day_totals WHERE workspace_id = p_workspace;
    INSERT INTO report_day_totals
    SELECT b.workspace_id, b.day, b.project_id, b.task_id, b.billable, b.invoiced, b.currency,
           sum(b.entries), sum(b.seconds), sum(b.rounded), sum(b.bill_rounded),
           sum(b.cost_rounded), sum(b.bill), sum(b.cost)
    FROM time_entries e CROSS JOIN LATERAL timetrack_code.report_day_bucket(e, 1) b
    WHERE e.workspace_id = p_workspace AND e.end_at IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END
$fn$;
