DELETE FROM idempotency_keys WHERE (api_key_id, key) IN (
    SELECT api_key_id, key FROM idempotency_keys WHERE created_at < :cutoff LIMIT :batch
)
