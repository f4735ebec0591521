ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    RESET plan_cache_mode;
ALTER FUNCTION timetrack_record_attempts(uuid[], text[], int[], timestamptz[], int[], int[],
                                         text[], text[], text[], timestamptz[], timestamptz[],
                                         bool[])
    RESET plan_cache_mode;
