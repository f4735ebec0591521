ALTER TABLE deliveries ADD COLUMN lease_expires_at timestamptz NULL;
UPDATE deliveries d SET lease_expires_at = l.expires_at
FROM delivery_leases l WHERE l.delivery_id = d.id AND l.workspace_id = d.workspace_id;
CREATE INDEX deliveries_leased_due_idx
    ON deliveries (subscription_id, next_attempt_at)
    WHERE status = 'PENDING' AND lease_expires_at IS NOT NULL;
DROP TABLE delivery_leases;
