-- The precedence of a rate's scope, most specific first: project_member, task, project, client,
-- member, workspace. The same order as the domain's `RateScope::LEVELS`
-- (crates/domain/src/model/rate.rs), which the contract tests hold both to.
CREATE FUNCTION timetrack_code.rate_level(p_scope text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT CASE p_scope
        WHEN 'project_member' THEN 1 WHEN 'task' THEN 2 WHEN 'project' THEN 3
        WHEN 'client' THEN 4 WHEN 'member' THEN 5 ELSE 6 END
$fn$;
