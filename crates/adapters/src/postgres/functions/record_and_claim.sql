-- One round trip for the delivery worker: record the attempts that have finished ($1-$16, as
-- timetrack_record_attempts), then claim ($17-$23, as timetrack_claim_deliveries), in one
-- transaction. The claim sees the leases the record just cleared, so a subscription's freed
-- in-flight slots are refilled at once.
--
-- Unless $24 (claim in any case), the claim runs only when a subscription of the recorded
-- attempts has due deliveries that no worker holds: those the recorded ones held back, the next
-- of an ordering key or those beyond the subscription's in-flight cap. The worker asks for the
-- claim in any case when it was woken, polled, or its last claim was full; otherwise, a round
-- that records one delivery at moderate load would run a claim that finds nothing. The probe is
-- one range of deliveries_pending_subscription_idx per recorded subscription.
--
-- The round commits asynchronously (no wait for its WAL flush): it holds only the queue's
-- bookkeeping, leases and outcomes. A database crash can forget its last moments (at most three
-- times wal_writer_delay), and the deliveries concerned are then sent again: a duplicate, never a
-- loss. Events and their deliveries are written by the API's own synchronous transactions, and an
-- attempt that ends its subscription is recorded apart, synchronously.
CREATE OR REPLACE FUNCTION timetrack_record_and_claim(bigint[], text[], int[], timestamptz[],
                                                      int[], int[], text[], text[], text[],
                                                      timestamptz[], timestamptz[], bool[], bool[],
                                                      uuid[], timestamptz[], bool[], timestamptz,
                                                      timestamptz, bigint, bigint, bigint,
                                                      uuid[], int[], bool)
RETURNS TABLE (delivery_id bigint, kind text, event_id uuid, subscription_id text,
               workspace_id uuid, event_type text, body text, url text, description text,
               secret text, previous_secret text, attempts integer, failing_since timestamptz,
               failing_notified boolean, ordering_key text, sequence bigint)
LANGUAGE plpgsql
SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    -- For this statement's transaction only (a function SET clause would end with the function,
    -- before the commit).
    PERFORM set_config('synchronous_commit', 'off', true);
    IF cardinality($1) > 0 THEN
        PERFORM timetrack_record_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                                          $13, $14, $15, $16);
    END IF;
    IF $19 > 0 AND ($24 OR EXISTS (
        SELECT 1 FROM deliveries d
        WHERE d.subscription_id = ANY ($2) AND d.status = 'PENDING' AND d.next_attempt_at <= $17
          AND NOT EXISTS (SELECT 1 FROM delivery_leases l
                          WHERE l.delivery_id = d.id AND l.expires_at > $17)
    )) THEN
        RETURN QUERY SELECT * FROM timetrack_claim_deliveries($17, $18, $19, $20, $21, $22, $23);
    END IF;
END
$fn$;
