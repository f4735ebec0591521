-- Plan the claim for every call. A plan kept for the connection was made when it was first used,
-- often when the queue and the event log were nearly empty (a new installation, a quiet spell
-- after housekeeping, a benchmark that cleared its history), and with those sizes any index
-- looks as good as any other: kept into a burst, such a plan read the whole primary key of events
-- for every claimed delivery (a claim of 54 read 305,474 buffers, about 230 ms a round). Planned
-- per call, the estimates follow the tables' current size, for about 0.45 ms a round.
--
-- Only the claim: the record function's setting would reach the foreign-key checks that fire
-- inside it (one per attempt row), and re-planning each of those cost more than it saved
-- (measured: 54,700 checks planned anew, each reading some 1,600 buffers, deliveries down to a
-- third).
ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    SET plan_cache_mode = force_custom_plan;
