ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    RESET plan_cache_mode;
