-- Pending deliveries of active subscriptions by state (those a claim would consider).
SELECT count(*) FILTER (WHERE d.next_attempt_at <= :now
                          AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= :now)) AS due,
       count(*) FILTER (WHERE d.next_attempt_at > :now
                          AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= :now)) AS scheduled,
       count(*) FILTER (WHERE d.lease_expires_at > :now) AS in_flight,
       min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= :now
                          AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= :now)) AS oldest_due
FROM deliveries d
JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.status = 'ACTIVE'
WHERE d.status = 'PENDING'
