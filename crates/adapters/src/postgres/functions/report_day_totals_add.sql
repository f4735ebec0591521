-- Adds signed bucket figures into report_day_totals (a bucket new to it is inserted), in key
-- order, so two writers never wait on each other's buckets in opposite orders; buckets whose
-- figures are all zero (an edit that moved nothing) are left alone, and buckets whose last
-- entry left are dropped.
CREATE FUNCTION timetrack_code.report_day_totals_add(p_deltas report_day_totals[])
RETURNS void
LANGUAGE plpgsql
AS $fn$
BEGIN
    INSERT INTO report_day_totals AS t
    SELECT * FROM unnest(p_deltas) d
    WHERE d.entries <> 0 OR d.seconds <> 0 OR d.rounded_seconds <> 0 OR d.bill_rounded <> 0
       OR d.cost_rounded <> 0 OR d.bill <> 0 OR d.cost <> 0
    ORDER BY d.workspace_id, d.day, d.project_id, d.task_id, d.billable, d.invoiced, d.currency
    ON CONFLICT (workspace_id, day, project_id, task_id, billable, invoiced, currency)
    DO UPDATE SET entries = t.entries + excluded.entries,
                  seconds = t.seconds + excluded.seconds,
                  rounded_seconds = t.rounded_seconds + excluded.rounded_seconds,
                  bill_rounded = t.bill_rounded + excluded.bill_rounded,
                  cost_rounded = t.cost_rounded + excluded.cost_rounded,
                  bill = t.bill + excluded.bill,
                  cost = t.cost + excluded.cost;
    DELETE FROM report_day_totals WHERE entries = 0;
END
$fn$;
