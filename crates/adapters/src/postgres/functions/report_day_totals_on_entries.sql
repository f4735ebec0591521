-- Keeps report_day_totals the sum of the stopped entries, in the transaction of every write:
-- one trigger per event (a trigger with transition tables has one), each statement's rows
-- grouped into buckets, old rows subtracted and new rows added (a write of 80,000 entries is
-- one upsert of its buckets, not 80,000).
--
-- First the shared pricing lock of every workspace concerned (pricing_lock.sql; the service
-- holds it already, this covers writes by cascade), and only then, in the next statements'
-- snapshots, the workspace's zone and rounding: a change of either takes that lock exclusively
-- and rebuilds, so every delta is of the settings the rebuild sees, or comes after it. A write
-- of running entries only stops there. The statements are static, so each connection plans
-- them once (planned at every write, they doubled the time of a timer start); they differ only
-- in the rows they read. Signed sums are bigint (an int128 sum in PostgreSQL, far cheaper than
-- numeric), stored as numeric. Many rows are grouped in memory, without JIT.
CREATE FUNCTION timetrack_code.report_day_totals_on_entries()
RETURNS trigger
LANGUAGE plpgsql
SET work_mem = '64MB'
SET jit = off
AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM timetrack_code.pricing_lock(d.ws, false)
        FROM (SELECT DISTINCT n.workspace_id AS ws FROM new_rows n WHERE n.end_at IS NOT NULL) d;
        IF FOUND THEN
            PERFORM timetrack_code.report_day_totals_add(ARRAY(
                SELECT (b.workspace_id, b.day, b.project_id, b.task_id, b.billable, b.invoiced,
                        b.currency, sum(b.entries), sum(b.seconds), sum(b.rounded),
                        sum(b.bill_rounded), sum(b.cost_rounded), sum(b.bill),
                        sum(b.cost))::report_day_totals
                FROM new_rows n CROSS JOIN LATERAL timetrack_code.report_day_bucket(n, 1) b
                GROUP BY b.workspace_id, b.day, b.project_id, b.task_id, b.billable,
                         b.invoiced, b.currency));
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM timetrack_code.pricing_lock(d.ws, false)
        FROM (SELECT DISTINCT o.workspace_id AS ws FROM old_rows o WHERE o.end_at IS NOT NULL) d;
        IF FOUND THEN
            PERFORM timetrack_code.report_day_totals_add(ARRAY(
                SELECT (b.workspace_id, b.day, b.project_id, b.task_id, b.billable, b.invoiced,
                        b.currency, sum(b.entries), sum(b.seconds), sum(b.rounded),
                        sum(b.bill_rounded), sum(b.cost_rounded), sum(b.bill),
                        sum(b.cost))::report_day_totals
                FROM old_rows o CROSS JOIN LATERAL timetrack_code.report_day_bucket(o, -1) b
                GROUP BY b.workspace_id, b.day, b.project_id, b.task_id, b.billable,
                         b.invoiced, b.currency));
        END IF;
    ELSE
        PERFORM timetrack_code.pricing_lock(d.ws, false)
        FROM (SELECT n.workspace_id AS ws FROM new_rows n WHERE n.end_at IS NOT NULL
              UNION SELECT o.workspace_id FROM old_rows o WHERE o.end_at IS NOT NULL) d;
        IF FOUND THEN
            PERFORM timetrack_code.report_day_totals_add(ARRAY(
                SELECT (b.workspace_id, b.day, b.project_id, b.task_id, b.billable, b.invoiced,
                        b.currency, sum(b.entries), sum(b.seconds), sum(b.rounded),
                        sum(b.bill_rounded), sum(b.cost_rounded), sum(b.bill),
                        sum(b.cost))::report_day_totals
                FROM (SELECT b.* FROM old_rows o CROSS JOIN LATERAL timetrack_code.report_day_bucket(o, -1) b
                      UNION ALL
                      SELECT b.* FROM new_rows n CROSS JOIN LATERAL timetrack_code.report_day_bucket(n, 1) b) b
                GROUP BY b.workspace_id, b.day, b.project_id, b.task_id, b.billable,
                         b.invoiced, b.currency));
        END IF;
    END IF;
    RETURN NULL;
END
$fn$;
