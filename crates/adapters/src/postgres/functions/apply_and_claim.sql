-- The second statement of a round that had streaks to decide: apply what the domain decided
-- (timetrack_code.apply_streaks; nothing when `subscription_ids` is empty), then claim as the usual
-- round does (timetrack_code.claim_after). The first statement, timetrack_code.record_attempts, recorded
-- the round and locked the streaks in the same transaction, which commits asynchronously like
-- the usual round's (see timetrack_code.record_and_claim).
CREATE FUNCTION timetrack_code.apply_and_claim(
    subscription_ids text[], streak_starts timestamptz[], streak_failures int[],
    forget_told bool[], back_since timestamptz[], due_at timestamptz[], bring_limit int,
    recorded text[], at timestamptz, lease_until timestamptz, claim_limit bigint,
    per_subscription bigint, per_workspace bigint, held_workspaces uuid[], held_counts int[],
    unshared uuid[], always bool)
RETURNS TABLE (delivery_id bigint, kind text, event_id uuid, subscription_id text,
               workspace_id uuid, event_type text, body text, url text, description text,
               secret text, previous_secret text, headers text, attempts integer, failing_since timestamptz,
               failing_notified boolean, ordering_key text, sequence bigint)
LANGUAGE plpgsql
SET jit = off SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    IF cardinality(apply_and_claim.subscription_ids) > 0 THEN
        PERFORM timetrack_code.apply_streaks(
            apply_and_claim.subscription_ids, apply_and_claim.streak_starts,
            apply_and_claim.streak_failures, apply_and_claim.forget_told,
            apply_and_claim.back_since, apply_and_claim.due_at,
            apply_and_claim.bring_limit);
    END IF;
    RETURN QUERY SELECT * FROM timetrack_code.claim_after(
        apply_and_claim.recorded, apply_and_claim.at,
        apply_and_claim.lease_until, apply_and_claim.claim_limit,
        apply_and_claim.per_subscription, apply_and_claim.per_workspace,
        apply_and_claim.held_workspaces, apply_and_claim.held_counts,
        apply_and_claim.unshared, apply_and_claim.always);
END
$fn$;
