ALTER FUNCTION timetrack_record_and_claim(uuid[], text[], integer[], timestamptz[], integer[],
    integer[], text[], text[], text[], timestamptz[], timestamptz[], boolean[], timestamptz,
    timestamptz, bigint, bigint)
    RESET jit;
ALTER FUNCTION timetrack_record_attempts(uuid[], text[], integer[], timestamptz[], integer[],
    integer[], text[], text[], text[], timestamptz[], timestamptz[], boolean[])
    RESET jit;
ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    RESET jit;
ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    SET plan_cache_mode = force_custom_plan;
