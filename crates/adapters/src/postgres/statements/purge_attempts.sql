DELETE FROM delivery_attempts WHERE id IN (
    SELECT id FROM delivery_attempts WHERE started_at < :cutoff LIMIT :batch
)
