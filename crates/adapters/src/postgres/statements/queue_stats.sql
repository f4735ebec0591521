-- Pending deliveries of active subscriptions by state (those a claim would consider); a delivery
-- whose lease runs is in flight.
SELECT count(*) FILTER (WHERE d.next_attempt_at <= :now AND NOT l.held) AS due,
       count(*) FILTER (WHERE d.next_attempt_at > :now AND NOT l.held) AS scheduled,
       count(*) FILTER (WHERE l.held) AS in_flight,
       min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= :now AND NOT l.held) AS oldest_due
FROM deliveries d
JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.status = 'ACTIVE'
CROSS JOIN LATERAL (
    SELECT EXISTS (SELECT 1 FROM delivery_leases x
                   WHERE x.delivery_id = d.id AND x.workspace_id = d.workspace_id
                     AND x.expires_at > :now) AS held
) l
WHERE d.status = 'PENDING'
