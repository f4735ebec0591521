-- Record each attempt's delivery by its primary key, whatever the statistics say. PL/pgSQL keeps
-- a plan per connection, and the delivery worker's connections live long: a plan made while the
-- queue held a row or two (a new installation, or a queue just emptied and vacuumed) estimated one
-- delivery per subscription, found deliveries_subscription_idx as good as the primary key for
-- "this subscription's row", and kept it once the queue had grown: every batch then read all of
-- that subscription's deliveries (about 10 ms a round with 5,000 of them; deliveries at S = 1 fell
-- from about 1,500/s to 300-800/s in the benchmark).
--
-- The subscription is now compared as an expression (`subscription_id || ''`), which no index
-- serves, so the only index condition left is the event, and the only index that leads with it
-- is the primary key: an event has one delivery per subscription, so each attempt reads a row or
-- a few. The same statement as 000006 otherwise.
CREATE OR REPLACE FUNCTION timetrack_record_attempts(uuid[], text[], int[], timestamptz[], int[], int[],
                                          text[], text[], text[], timestamptz[], timestamptz[],
                                          bool[])
RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $fn$
BEGIN
    WITH r AS (
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::int[], $4::timestamptz[], $5::int[],
                             $6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                             $11::timestamptz[], $12::bool[])
            AS r(event_id, subscription_id, attempt, started_at, latency_ms, status_code, error,
                 excerpt, status, next_at, finished, done)
    ), attempt AS (
        INSERT INTO delivery_attempts (event_id, subscription_id, attempt, started_at, latency_ms,
                                       status_code, error, response_excerpt)
        SELECT event_id, subscription_id, attempt, started_at, latency_ms, status_code, error, excerpt
        FROM r
        ON CONFLICT (event_id, subscription_id, attempt) DO NOTHING
    ), delivery AS (
        UPDATE deliveries d
        SET status = r.status, attempts = r.attempt, next_attempt_at = r.next_at,
            lease_expires_at = NULL, last_status_code = r.status_code, last_error = r.error,
            updated_at = r.finished
        FROM r
        -- By the primary key's first column alone (see above).
        WHERE d.event_id = r.event_id AND d.subscription_id || '' = r.subscription_id
          -- Unless cancelled meanwhile. Written so that it cannot match the partial indexes of
          -- pending deliveries: with statistics saying none is pending, the planner scanned one
          -- of them whole, for every batch, instead of finding each row by its key.
          AND d.status IS NOT DISTINCT FROM 'PENDING'
    ), latest AS (
        SELECT DISTINCT ON (subscription_id) subscription_id, done, started_at
        FROM r ORDER BY subscription_id, finished DESC
    )
    UPDATE webhook_subscriptions s
    SET failing_since = CASE WHEN latest.done THEN NULL ELSE latest.started_at END
    FROM latest
    WHERE s.id = latest.subscription_id
      AND CASE WHEN latest.done THEN s.failing_since IS NOT NULL ELSE s.failing_since IS NULL END;
END
$fn$;
