-- round_half_up(p_hourly_minor × p_seconds / 3600) in integers: the domain's `amount_minor`
-- (crates/domain/src/model/rate.rs) in SQL; 0 without a rate. In bigint while the product
-- cannot overflow (a rate is at most 10^9 minor units an hour, so up to 9 × 10^9 seconds, about
-- 285 years), which is every real entry and several times faster than numeric; in numeric
-- beyond. Inlined by the planner.
CREATE FUNCTION timetrack_code.amount_minor(p_hourly_minor bigint, p_seconds bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT CASE
        WHEN p_hourly_minor IS NULL OR p_seconds <= 0 THEN 0
        WHEN p_seconds <= 9000000000 AND p_hourly_minor BETWEEN 0 AND 1000000000
            THEN (p_hourly_minor * p_seconds + 1800) / 3600
        ELSE div(p_hourly_minor::numeric * p_seconds + 1800, 3600)::bigint
    END
$fn$;
