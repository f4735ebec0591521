-- Plan the queue's statements for every call. A plan kept for the connection was made when it
-- was first used, often when the queue and the event log were nearly empty (a new installation,
-- or right after housekeeping), and with those sizes any index looks as good as any other: kept
-- into a burst, such a plan read the whole primary key of events for every claimed delivery (a
-- claim of 54 read 305,474 buffers). Planned per call, the estimates follow the tables' current
-- size; planning costs a fraction of a millisecond per round, shared by every delivery in it.
ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    SET plan_cache_mode = force_custom_plan;
ALTER FUNCTION timetrack_record_attempts(uuid[], text[], int[], timestamptz[], int[], int[],
                                         text[], text[], text[], timestamptz[], timestamptz[],
                                         bool[])
    SET plan_cache_mode = force_custom_plan;
