-- The entries of a report and their figures, as `priced`: the workspace's stopped entries that
-- start within [$3, $4] (days in zone $2, so a day is its local midnight to the next, DST
-- included), matching the filters ($5 clients through their projects, $6 projects, $7 tasks,
-- $8 tags: any of them, $9 members; an empty list filters nothing), $10 billable and $11
-- invoiced (on an invoice, draft or issued) when not null; each with its duration, its duration
-- rounded by $12 minutes the $13 way, and its amounts at its stored rates.
-- Parameters: $1 workspace, $2 zone, $3 from, $4 to, $5..$9 id lists, $10 billable, $11 invoiced,
-- $12 rounding minutes, $13 rounding mode.
--
-- Written for one pass over the range: each step is NOT MATERIALIZED, so the planner folds them
-- into the statement that reads `priced` and computes only the columns it uses; the duration is
-- date_part's float (exact for whole seconds, which every stored time is), several times cheaper
-- per row than extract's numeric; the workspace's currency is read once.
WITH entries AS NOT MATERIALIZED (
    SELECT e.id, e.user_id, e.project_id, e.task_id, p.client_id, e.billable,
           e.start_at, e.end_at, e.description,
           (e.start_at AT TIME ZONE $2)::date AS day,
           date_part('epoch', e.end_at - e.start_at)::bigint AS seconds,
           coalesce(e.price_currency, (SELECT w.currency FROM workspaces w WHERE w.id = $1))
               AS currency,
           e.billable_rate_minor, e.cost_rate_minor
    FROM time_entries e
    LEFT JOIN projects p ON p.workspace_id = e.workspace_id AND p.id = e.project_id
    WHERE e.workspace_id = $1
      AND e.start_at >= ($3::date::timestamp AT TIME ZONE $2)
      AND e.start_at < (($4::date + 1)::timestamp AT TIME ZONE $2)
      AND e.end_at IS NOT NULL
      AND (cardinality($5::uuid[]) = 0 OR p.client_id = ANY ($5))
      AND (cardinality($6::uuid[]) = 0 OR e.project_id = ANY ($6))
      AND (cardinality($7::uuid[]) = 0 OR e.task_id = ANY ($7))
      AND (cardinality($8::uuid[]) = 0 OR EXISTS (
            SELECT 1 FROM time_entry_tags f
            WHERE f.workspace_id = e.workspace_id AND f.time_entry_id = e.id AND f.tag_id = ANY ($8)))
      AND (cardinality($9::uuid[]) = 0 OR e.user_id = ANY ($9))
      AND ($10::boolean IS NULL OR e.billable = $10)
      AND ($11::boolean IS NULL OR (e.invoice_id IS NOT NULL) = $11)
), rounded AS NOT MATERIALIZED (
    SELECT entries.*, timetrack_code.rounded_seconds(seconds, $12, $13) AS rounded
    FROM entries
), priced AS NOT MATERIALIZED (
    SELECT rounded.*,
           timetrack_code.amount_minor(billable_rate_minor, rounded) AS bill,
           timetrack_code.amount_minor(cost_rate_minor, rounded) AS cost
    FROM rounded
)
