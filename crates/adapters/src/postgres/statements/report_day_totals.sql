-- The day totals of a report (report_day_totals, kept by the triggers of
-- functions/report_day_totals_triggers.sql), as
-- `priced`: the same columns as report_base.sql's entries, one row per bucket of the workspace's
-- days [$3, $4] with its figures summed (`entries` of them). Only for what the buckets can
-- answer, which the caller checks in the snapshot it reads them in: zone $2 is the workspace's,
-- no tags ($8) and no members ($9) filtered, and rounding $12/$13 either none (the unrounded
-- sums) or the workspace's own (the rounded ones). Parameters as in report_base.sql.
WITH priced AS NOT MATERIALIZED (
    SELECT p.client_id,
           nullif(t.project_id, '00000000-0000-0000-0000-000000000000') AS project_id,
           nullif(t.task_id, '00000000-0000-0000-0000-000000000000') AS task_id,
           t.day, t.billable,
           coalesce(nullif(t.currency, ''), (SELECT w.currency FROM workspaces w WHERE w.id = $1))
               AS currency,
           t.entries, t.seconds,
           CASE WHEN $12 > 0 THEN t.rounded_seconds ELSE t.seconds END AS rounded,
           CASE WHEN $12 > 0 THEN t.bill_rounded ELSE t.bill END AS bill,
           CASE WHEN $12 > 0 THEN t.cost_rounded ELSE t.cost END AS cost
    FROM report_day_totals t
    LEFT JOIN projects p ON p.workspace_id = t.workspace_id AND p.id = t.project_id
    WHERE t.workspace_id = $1
      AND t.day BETWEEN $3 AND $4
      AND (cardinality($5::uuid[]) = 0 OR p.client_id = ANY ($5))
      AND (cardinality($6::uuid[]) = 0 OR t.project_id = ANY ($6))
      AND (cardinality($7::uuid[]) = 0 OR t.task_id = ANY ($7))
      AND cardinality($8::uuid[]) = 0
      AND cardinality($9::uuid[]) = 0
      AND ($10::boolean IS NULL OR t.billable = $10)
      AND ($11::boolean IS NULL OR t.invoiced = $11)
      AND $2::text IS NOT NULL AND $13::text IS NOT NULL
)
