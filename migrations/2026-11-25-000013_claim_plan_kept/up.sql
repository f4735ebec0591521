-- Keep the claim's plan for the connection instead of planning it on every call, and never
-- compile the queue's statements just in time.
--
-- Planning was about half of a claim: 1.44-1.50 ms for a claim of 10 planned per call against
-- 0.82-0.87 ms with the plan kept (pgbench, one connection), and every delivery waits for a
-- claim. Migration 000009 planned it per call because a kept plan of an earlier claim, made on
-- a nearly empty queue and event log, read the whole primary key of events for every claimed
-- delivery. The claim of migration 000012 runs each step through one index, with sequential
-- scans, hash and merge joins off: its kept plan, made on a queue analyzed with one delivery,
-- analyzed empty or never analyzed, claims 10 of 40,000 pending by key (adapter test
-- `a_claim_planned_on_statistics_of_a_tiny_queue_still_claims_by_key_in_a_burst`, which runs
-- the function as it is configured), as it does on statistics that say nothing is pending.
--
-- A kept plan is costed without the call's values, and after autovacuum analyzed a large queue
-- its estimate passed `jit_above_cost` (285,093 against 100,000): every claim then compiled 61
-- expressions first, about 20 ms a round, and at 2,000 deliveries/s delivery fell seconds
-- behind. The queue's statements each touch a few hundred rows, where compiling never pays, so
-- JIT is off in the three queue functions.
ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint)
    SET jit = off;
ALTER FUNCTION timetrack_record_attempts(uuid[], text[], integer[], timestamptz[], integer[],
    integer[], text[], text[], text[], timestamptz[], timestamptz[], boolean[])
    SET jit = off;
ALTER FUNCTION timetrack_record_and_claim(uuid[], text[], integer[], timestamptz[], integer[],
    integer[], text[], text[], text[], timestamptz[], timestamptz[], boolean[], timestamptz,
    timestamptz, bigint, bigint)
    SET jit = off;
