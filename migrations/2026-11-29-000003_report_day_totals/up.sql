-- The stopped entries of every workspace summed per local day (in the workspace's time zone) and
-- per project, task, billable, invoiced and price currency: what a summary that needs no member,
-- no tag and no other zone is read from, instead of every entry of its period (ADR 0024). Kept
-- exact by the triggers below, in the transaction of every write of entries; rebuilt for a
-- workspace when its time zone or rounding changes.
--
-- A missing project or task is the nil uuid and an entry without a price currency is '' (the
-- workspace's currency when read), so every key is a plain column of the primary key. The figures
-- are those of `statements/report_base.sql`, summed: the durations, the durations rounded the
-- workspace's way, and the amounts at the entries' stored rates both rounded and not (a report
-- asks for `rounding=workspace` or `none`). Amounts are numeric: a day's sum may pass bigint,
-- which the reader refuses with a clear error rather than failing the write.
CREATE TABLE report_day_totals (
    workspace_id      uuid    NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    day               date    NOT NULL,
    project_id        uuid    NOT NULL,
    task_id           uuid    NOT NULL,
    billable          boolean NOT NULL,
    invoiced          boolean NOT NULL,
    currency          text    NOT NULL,
    entries           bigint  NOT NULL,
    seconds           bigint  NOT NULL,
    rounded_seconds   bigint  NOT NULL,
    bill_rounded      numeric NOT NULL,
    cost_rounded      numeric NOT NULL,
    bill              numeric NOT NULL,
    cost              numeric NOT NULL,
    PRIMARY KEY (workspace_id, day, project_id, task_id, billable, invoiced, currency)
);
-- The days whose last entry just left, found and dropped by the write that emptied them.
CREATE INDEX report_day_totals_empty_idx ON report_day_totals (workspace_id) WHERE entries = 0;

-- The bodies below call the functions of `timetrack_code`, which are installed after the
-- migrations: checked when they run, not now.
SET LOCAL check_function_bodies = off;

-- One entry's bucket and figures, signed by p_sign (+1 an entry written, -1 one gone): none for
-- a running entry. The figures are report_base.sql's: the day in the workspace's zone, the
-- duration, its rounding the workspace's way, and the amounts at the stored rates with and
-- without it. A plain SQL function, which the planner inlines into the statement that sums it;
-- the rounded duration is computed behind a fence (OFFSET 0), so `amount_minor` is inlined too
-- (with an expression for an argument it would be called row by row: three times slower on a
-- rate change of 80,000 entries).
CREATE FUNCTION report_day_bucket(p_entry time_entries, p_sign integer)
RETURNS TABLE (workspace_id uuid, day date, project_id uuid, task_id uuid, billable boolean,
               invoiced boolean, currency text, entries integer, seconds bigint, rounded bigint,
               bill_rounded bigint, cost_rounded bigint, bill bigint, cost bigint)
LANGUAGE sql STABLE
AS $fn$
    SELECT (p_entry).workspace_id,
           ((p_entry).start_at AT TIME ZONE w.timezone)::date,
           coalesce((p_entry).project_id, '00000000-0000-0000-0000-000000000000'),
           coalesce((p_entry).task_id, '00000000-0000-0000-0000-000000000000'),
           (p_entry).billable, (p_entry).invoice_id IS NOT NULL,
           coalesce((p_entry).price_currency, ''),
           p_sign, p_sign * r.seconds, p_sign * r.rounded,
           p_sign * timetrack_code.amount_minor((p_entry).billable_rate_minor, r.rounded),
           p_sign * timetrack_code.amount_minor((p_entry).cost_rate_minor, r.rounded),
           p_sign * timetrack_code.amount_minor((p_entry).billable_rate_minor, r.seconds),
           p_sign * timetrack_code.amount_minor((p_entry).cost_rate_minor, r.seconds)
    FROM workspaces w
    CROSS JOIN LATERAL (
        SELECT f.seconds,
               timetrack_code.rounded_seconds(f.seconds, w.rounding_minutes, w.rounding_mode)
                   AS rounded
        FROM (SELECT date_part('epoch', (p_entry).end_at - (p_entry).start_at)::bigint
                  AS seconds) f
        OFFSET 0
    ) r
    WHERE w.id = (p_entry).workspace_id AND (p_entry).end_at IS NOT NULL
$fn$;

-- Adds signed bucket figures into report_day_totals (a bucket new to it is inserted), in key
-- order, so two writers never wait on each other's buckets in opposite orders; buckets whose
-- figures are all zero (an edit that moved nothing) are left alone, and buckets whose last
-- entry left are dropped.
CREATE FUNCTION report_day_totals_add(p_deltas report_day_totals[])
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
CREATE FUNCTION report_day_totals_on_entries()
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
            PERFORM report_day_totals_add(ARRAY(
                SELECT (b.workspace_id, b.day, b.project_id, b.task_id, b.billable, b.invoiced,
                        b.currency, sum(b.entries), sum(b.seconds), sum(b.rounded),
                        sum(b.bill_rounded), sum(b.cost_rounded), sum(b.bill),
                        sum(b.cost))::report_day_totals
                FROM new_rows n CROSS JOIN LATERAL report_day_bucket(n, 1) b
                GROUP BY b.workspace_id, b.day, b.project_id, b.task_id, b.billable,
                         b.invoiced, b.currency));
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM timetrack_code.pricing_lock(d.ws, false)
        FROM (SELECT DISTINCT o.workspace_id AS ws FROM old_rows o WHERE o.end_at IS NOT NULL) d;
        IF FOUND THEN
            PERFORM report_day_totals_add(ARRAY(
                SELECT (b.workspace_id, b.day, b.project_id, b.task_id, b.billable, b.invoiced,
                        b.currency, sum(b.entries), sum(b.seconds), sum(b.rounded),
                        sum(b.bill_rounded), sum(b.cost_rounded), sum(b.bill),
                        sum(b.cost))::report_day_totals
                FROM old_rows o CROSS JOIN LATERAL report_day_bucket(o, -1) b
                GROUP BY b.workspace_id, b.day, b.project_id, b.task_id, b.billable,
                         b.invoiced, b.currency));
        END IF;
    ELSE
        PERFORM timetrack_code.pricing_lock(d.ws, false)
        FROM (SELECT n.workspace_id AS ws FROM new_rows n WHERE n.end_at IS NOT NULL
              UNION SELECT o.workspace_id FROM old_rows o WHERE o.end_at IS NOT NULL) d;
        IF FOUND THEN
            PERFORM report_day_totals_add(ARRAY(
                SELECT (b.workspace_id, b.day, b.project_id, b.task_id, b.billable, b.invoiced,
                        b.currency, sum(b.entries), sum(b.seconds), sum(b.rounded),
                        sum(b.bill_rounded), sum(b.cost_rounded), sum(b.bill),
                        sum(b.cost))::report_day_totals
                FROM (SELECT b.* FROM old_rows o CROSS JOIN LATERAL report_day_bucket(o, -1) b
                      UNION ALL
                      SELECT b.* FROM new_rows n CROSS JOIN LATERAL report_day_bucket(n, 1) b) b
                GROUP BY b.workspace_id, b.day, b.project_id, b.task_id, b.billable,
                         b.invoiced, b.currency));
        END IF;
    END IF;
    RETURN NULL;
END
$fn$;

-- Sums a workspace's stopped entries afresh (after its zone or rounding changed, and once for
-- every workspace when this table is created), with the same buckets.
CREATE FUNCTION report_day_totals_rebuild(p_workspace uuid)
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
    FROM time_entries e CROSS JOIN LATERAL report_day_bucket(e, 1) b
    WHERE e.workspace_id = p_workspace AND e.end_at IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END
$fn$;

-- A workspace whose time zone or rounding changed: its totals summed again, under its exclusive
-- pricing lock (the service takes it before the row; taken again here for any other writer).
CREATE FUNCTION report_day_totals_on_settings()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    PERFORM timetrack_code.pricing_lock(NEW.id, true);
    PERFORM report_day_totals_rebuild(NEW.id);
    RETURN NULL;
END
$fn$;

CREATE TRIGGER report_day_totals_on_insert AFTER INSERT ON time_entries
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION report_day_totals_on_entries();
CREATE TRIGGER report_day_totals_on_update AFTER UPDATE ON time_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION report_day_totals_on_entries();
CREATE TRIGGER report_day_totals_on_delete AFTER DELETE ON time_entries
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION report_day_totals_on_entries();
CREATE TRIGGER report_day_totals_on_settings AFTER UPDATE OF timezone, rounding_minutes, rounding_mode
    ON workspaces
    FOR EACH ROW
    WHEN (OLD.timezone IS DISTINCT FROM NEW.timezone
          OR OLD.rounding_minutes IS DISTINCT FROM NEW.rounding_minutes
          OR OLD.rounding_mode IS DISTINCT FROM NEW.rounding_mode)
    EXECUTE FUNCTION report_day_totals_on_settings();

SELECT report_day_totals_rebuild(id) FROM workspaces;
