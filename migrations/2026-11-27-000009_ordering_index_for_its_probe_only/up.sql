-- The ordering index served the claim's ordering probe only by intent: its predicate (not final)
-- was meant to be one the planner cannot prove from the claim's `status = 'PENDING'`, but it can
-- (PENDING is not one of the final states). On statistics taken while nothing was pending, the
-- claim's kept plan then scanned this whole index, with a filter, for each subscription's
-- deliveries, for the count of its leases and for its test deliveries, and kept doing so into the
-- next burst: 1.5 s a claim with 50,000 pending in the scale-out benchmark. Its predicate now
-- also requires an ordering key, which only the probe states, so no other step can use it.
DROP INDEX deliveries_ordering_idx;
CREATE INDEX deliveries_ordering_idx
    ON deliveries ((subscription_id || '/' || ordering_key), sequence)
    WHERE status NOT IN ('DELIVERED', 'FAILED', 'CANCELLED') AND ordering_key IS NOT NULL;
