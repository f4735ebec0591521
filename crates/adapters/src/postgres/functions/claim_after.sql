-- The claim that ends a recording round (timetrack_code.record_and_claim, timetrack_code.apply_and_claim):
-- timetrack_code.claim_deliveries with the claim's parameters, run in any case when `always` (the
-- worker was woken, polled, or its last claim was full), otherwise only when a subscription of
-- the recorded attempts (`recorded`) has due deliveries that no worker holds: those the recorded
-- ones held back, the next of an ordering key or those beyond the subscription's in-flight cap.
-- Without that, a round that records one delivery at moderate load would run a claim that finds
-- nothing. The probe is one range of deliveries_pending_subscription_idx per recorded
-- subscription. No claim when `claim_limit` is 0.
CREATE FUNCTION timetrack_code.claim_after(
    recorded text[], at timestamptz, lease_until timestamptz, claim_limit bigint,
    per_subscription bigint, per_workspace bigint, held_workspaces uuid[], held_counts int[],
    unshared uuid[], always bool)
RETURNS TABLE (delivery_id bigint, kind text, event_id uuid, subscription_id text,
               workspace_id uuid, event_type text, body text, url text, description text,
               secret text, previous_secret text, headers text, attempts integer, failing_since timestamptz,
               failing_notified boolean, ordering_key text, sequence bigint)
LANGUAGE plpgsql
SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    IF claim_after.claim_limit > 0 AND (claim_after.always OR EXISTS (
        SELECT 1 FROM deliveries d
        WHERE d.subscription_id = ANY (claim_after.recorded) AND d.status = 'PENDING'
          AND d.next_attempt_at <= claim_after.at
          AND NOT EXISTS (SELECT 1 FROM delivery_leases l
                          WHERE l.delivery_id = d.id
                            AND l.expires_at > claim_after.at)
    )) THEN
        RETURN QUERY SELECT * FROM timetrack_code.claim_deliveries(
            claim_after.at, claim_after.lease_until,
            claim_after.claim_limit, claim_after.per_subscription,
            claim_after.per_workspace, claim_after.held_workspaces,
            claim_after.held_counts, claim_after.unshared);
    END IF;
END
$fn$;
