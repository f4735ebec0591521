-- round_half_up(p_hourly_minor × p_seconds / 3600) in integers: the domain's `amount_minor`
-- (crates/domain/src/model/rate.rs) in SQL. numeric, so no product overflows; 0 without a rate.
CREATE FUNCTION timetrack_code.amount_minor(p_hourly_minor bigint, p_seconds bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT coalesce(div(p_hourly_minor::numeric * greatest(p_seconds, 0) + 1800, 3600)::bigint, 0)
$fn$;
