-- Requests counted by the shared rate limiter (TIMETRACK_RATE_LIMIT_STORE=postgres): one row per
-- admitted request, kept for the 60 s window and pruned as keys are checked. Unlogged: counts are
-- worth nothing after a crash, and skipping the WAL keeps each check cheap.
CREATE UNLOGGED TABLE rate_limit_hits (
    id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key text        NOT NULL,
    at  timestamptz NOT NULL
);
CREATE INDEX rate_limit_hits_key_at_idx ON rate_limit_hits (key, at);
