-- One entry's bucket and figures, signed by p_sign (+1 an entry written, -1 one gone): none for
-- a running entry. The figures are report_base.sql's: the day in the workspace's zone, the
-- duration, its rounding the workspace's way, and the amounts at the stored rates with and
-- without it. A plain SQL function, which the planner inlines into the statement that sums it;
-- the rounded duration is computed behind a fence (OFFSET 0), so `amount_minor` is inlined too
-- (with an expression for an argument it would be called row by row: three times slower on a
-- rate change of 80,000 entries).
CREATE FUNCTION timetrack_code.report_day_bucket(p_entry time_entries, p_sign integer)
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
