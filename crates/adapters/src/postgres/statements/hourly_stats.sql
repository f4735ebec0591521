-- A subscription's attempts in 24 hourly buckets (UTC), oldest first, ending with the hour of
-- `now`: how many succeeded (recorded without an error), how many failed, and the median and
-- 95th percentile of their durations (null for an hour without attempts).
WITH hours AS (
    SELECT generate_series(date_trunc('hour', :now::timestamptz, 'UTC') - interval '23 hours',
                           date_trunc('hour', :now::timestamptz, 'UTC'),
                           interval '1 hour') AS start
)
SELECT h.start,
       count(a.id) FILTER (WHERE a.error IS NULL) AS delivered,
       count(a.id) FILTER (WHERE a.error IS NOT NULL) AS failed,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY a.latency_ms) AS p50_ms,
       percentile_disc(0.95) WITHIN GROUP (ORDER BY a.latency_ms) AS p95_ms
FROM hours h
LEFT JOIN delivery_attempts a
       ON a.subscription_id = :id
      AND a.started_at >= h.start AND a.started_at < h.start + interval '1 hour'
GROUP BY h.start
ORDER BY h.start
