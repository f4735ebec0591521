-- A duration rounded to a step of p_minutes (0: none) the p_mode way: the domain's
-- `Rounding::apply` (crates/domain/src/model/workspace.rs) in SQL, for sums taken in the
-- database (reports, a rate's dry run); the contract tests hold both to the same answers. A
-- plain SQL expression, so the planner inlines it, and it names p_seconds once: an inlined
-- function repeats its argument's expression at every use, and a report sums it per entry.
-- Up adds a step less one second before flooring; nearest adds half a step (a step is a whole
-- number of minutes, so an even number of seconds), which rounds a half up.
CREATE FUNCTION timetrack_code.rounded_seconds(p_seconds bigint, p_minutes integer, p_mode text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT (greatest(p_seconds, 0)
            + CASE WHEN p_minutes <= 0 THEN 0
                   WHEN p_mode = 'up' THEN p_minutes * 60 - 1
                   WHEN p_mode = 'nearest' THEN p_minutes * 30
                   ELSE 0 END)
           / greatest(p_minutes * 60, 1) * greatest(p_minutes * 60, 1)
$fn$;
