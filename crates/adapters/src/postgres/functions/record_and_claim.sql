-- One round trip for the delivery worker's usual round: record attempts that all succeeded, of
-- subscriptions whose streaks it cannot change (timetrack_code.record_attempts, and
-- timetrack_code.lock_streaks to check that none is to decide), then claim
-- (timetrack_code.claim_after), in one transaction. The claim sees the leases the record just
-- cleared, so a subscription's freed in-flight slots are refilled at once.
--
-- The round's premise is the domain's `Round::changes_nothing_for`: every attempt that is not a
-- test succeeded, and no subscription of the round is failing or being brought back. The worker
-- checks it on what the claim showed; if the recording finds a streak to decide all the same
-- (another worker's failure came in between), the statement raises 'timetrack: a streak to
-- decide', which undoes it, and the worker records the round through the deciding path
-- (timetrack_code.record_round, the domain's decision, timetrack_code.apply_and_claim).
--
-- The round commits asynchronously (no wait for its WAL flush): it holds only the queue's
-- bookkeeping, leases and outcomes. A database crash can forget its last moments (at most three
-- times wal_writer_delay), and the deliveries concerned are then sent again: a duplicate, never a
-- loss. Events and their deliveries are written by the API's own synchronous transactions, and an
-- attempt that ends its subscription is recorded apart, synchronously.
CREATE FUNCTION timetrack_code.record_and_claim(
    delivery_ids bigint[], subscription_ids text[], attempt_numbers int[],
    started timestamptz[], latency_ms int[], codes int[], errors text[], excerpts text[], statuses text[],
    next_at timestamptz[], finished timestamptz[], done bool[], tests bool[],
    workspace_ids uuid[], not_before timestamptz[], lossy bool[], signatures text[],
    custom_headers text[],
    at timestamptz,
    lease_until timestamptz, claim_limit bigint, per_subscription bigint, per_workspace bigint,
    held_workspaces uuid[], held_counts int[], unshared uuid[], always bool)
RETURNS TABLE (delivery_id bigint, kind text, event_id uuid, subscription_id text,
               workspace_id uuid, event_type text, body text, url text, description text,
               secret text, previous_secret text, headers text, attempts integer, failing_since timestamptz,
               failing_notified boolean, ordering_key text, sequence bigint)
LANGUAGE plpgsql
SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    -- For this statement's transaction only (a function SET clause would end with the function,
    -- before the commit).
    PERFORM set_config('synchronous_commit', 'off', true);
    -- The recording's arguments are this function's first eighteen, in the same order.
    IF cardinality($1) > 0 THEN
        PERFORM timetrack_code.record_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                                          $13, $14, $15, $16, $17, $18);
        IF EXISTS (SELECT 1 FROM timetrack_code.lock_streaks($2, $13, $12)) THEN
            RAISE EXCEPTION 'timetrack: a streak to decide';
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM timetrack_code.claim_after(
        record_and_claim.subscription_ids, record_and_claim.at,
        record_and_claim.lease_until, record_and_claim.claim_limit,
        record_and_claim.per_subscription, record_and_claim.per_workspace,
        record_and_claim.held_workspaces, record_and_claim.held_counts,
        record_and_claim.unshared, record_and_claim.always);
END
$fn$;
