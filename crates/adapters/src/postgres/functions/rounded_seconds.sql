-- A duration rounded to a step of p_minutes (0: none) the p_mode way: the domain's
-- `Rounding::apply` (crates/domain/src/model/workspace.rs) in SQL, for sums taken in the
-- database (reports, a rate's dry run); the contract tests hold both to the same answers. A
-- plain SQL expression, so the planner inlines it.
CREATE FUNCTION timetrack_code.rounded_seconds(p_seconds bigint, p_minutes integer, p_mode text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT CASE
        WHEN p_seconds <= 0 THEN 0
        WHEN p_minutes = 0 THEN p_seconds
        WHEN p_mode = 'down' THEN p_seconds - p_seconds % (p_minutes * 60)
        WHEN p_mode = 'up' AND p_seconds % (p_minutes * 60) = 0 THEN p_seconds
        WHEN p_mode = 'up' THEN p_seconds - p_seconds % (p_minutes * 60) + p_minutes * 60
        WHEN (p_seconds % (p_minutes * 60)) * 2 >= p_minutes * 60
            THEN p_seconds - p_seconds % (p_minutes * 60) + p_minutes * 60
        ELSE p_seconds - p_seconds % (p_minutes * 60)
    END
$fn$;
