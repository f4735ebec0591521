-- The deliveries a member queued again (replays, resends, tests) by subscription and time: the
-- quota on queueing again counts the last minute's (statements/requeued_since.sql). Partial on
-- a condition no reference check states, so the checks of deliveries' keys keep to the primary
-- key (migration 000012).
CREATE INDEX deliveries_requeued_idx ON deliveries (subscription_id, created_at)
    WHERE kind <> 'event';
