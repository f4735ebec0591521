-- A claim's hold on one subscription (timetrack_code.claim_deliveries, ADR 0026): how many more
-- of its deliveries the claim may lease, or 0 when another claim is leasing the subscription's
-- deliveries at this moment.
--
-- The subscription's lock, transaction-scoped and only tried (never waited for): the pair
-- (1953066347, hashtext(subscription)), 1953066347 being "time" in ASCII; the two-key form keeps
-- it apart from the one-key locks of migrations and rate limits. Two claims on one subscription
-- therefore never overlap; claims on different subscriptions never meet. A claim that finds the
-- lock taken leaves the subscription to the claim holding it, which leases as much as the
-- subscription's cap allows.
--
-- The count of what the subscription has in flight runs after the lock, in a statement of its
-- own: in a volatile function each statement takes a new snapshot (READ COMMITTED), so it sees
-- every lease committed before the lock was had, whatever the calling claim's snapshot. A claim
-- that held the lock before this one has committed (its leases counted) or is still running (and
-- this one did not get the lock). The count starts at the subscription's oldest live due
-- delivery, found in the same snapshot: every running lease is of a pending delivery whose due
-- time is its lease's (or later than `at`, taken by a process whose clock runs ahead), so none is
-- older; the walk starts past the dead entries of recorded leases.
--
-- Planned with the calling claim's settings (no sequential, bitmap or hash plans; a kept plan).
CREATE FUNCTION timetrack_code.claim_room(
    subscription text, at timestamptz, per_subscription bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $fn$
DECLARE
    first_due timestamptz;
BEGIN
    IF NOT pg_try_advisory_xact_lock(1953066347, hashtext(claim_room.subscription)) THEN
        RETURN 0;
    END IF;
    SELECT d.next_attempt_at INTO first_due FROM deliveries d
    WHERE d.subscription_id = claim_room.subscription AND d.status = 'PENDING'
      AND d.next_attempt_at <= claim_room.at
    ORDER BY d.subscription_id, d.next_attempt_at LIMIT 1;
    RETURN greatest(0, claim_room.per_subscription - (
        SELECT count(*) FROM delivery_leases f
        WHERE f.subscription_id = claim_room.subscription
          AND f.due_at >= coalesce(first_due, claim_room.at)
          AND f.expires_at > claim_room.at));
END
$fn$;
