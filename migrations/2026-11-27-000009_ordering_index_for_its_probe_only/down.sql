DROP INDEX deliveries_ordering_idx;
CREATE INDEX deliveries_ordering_idx
    ON deliveries ((subscription_id || '/' || ordering_key), sequence)
    WHERE status NOT IN ('DELIVERED', 'FAILED', 'CANCELLED');
