-- A page of the catch-up feed read backwards: the workspace's events of `types` before
-- (`before_txid`, `before_seq`), newest first, among those of transactions below the oldest
-- transaction still running (as `event_feed.sql`; `horizon` is returned for the shared row type,
-- and alone on a row of nulls when there is no event). An event about a webhook shows only to that
-- webhook's owner (`viewer`; functions/shows_to.sql).
-- `e.seq > 0` holds for every event: it lets this query use the workspace's partial index, which
-- no reference check can (the baseline migration's header).
WITH h AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon
)
SELECT h.horizon, e.id, e.event_type, e.created_at, e.body, e.txid, e.seq
FROM h
LEFT JOIN LATERAL (
    SELECT e.id, e.event_type, e.created_at, e.body, e.txid, e.seq
    FROM events e
    WHERE e.workspace_id = :workspace AND e.seq > 0
      AND (e.txid, e.seq) < (:before_txid, :before_seq)
      AND e.txid < h.horizon
      AND e.event_type = ANY (:types)
      AND timetrack_code.shows_to(e.visible_to, :viewer)
    ORDER BY e.txid DESC, e.seq DESC
    LIMIT :limit
) e ON true
ORDER BY e.txid DESC, e.seq DESC
