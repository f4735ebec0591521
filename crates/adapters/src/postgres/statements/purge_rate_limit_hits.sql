DELETE FROM rate_limit_hits WHERE id IN (
    SELECT id FROM rate_limit_hits WHERE at < :cutoff LIMIT :batch
)
