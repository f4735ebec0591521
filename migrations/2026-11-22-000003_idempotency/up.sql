-- Idempotency keys of POST requests: the first request's fingerprint and, once it finished, its
-- response, replayed to repeats with the same key and body for 24 hours.
CREATE TABLE idempotency_keys (
    api_key_id  uuid        NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    key         text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    fingerprint bytea       NOT NULL CHECK (length(fingerprint) = 32),
    -- NULL while the first request is still running.
    status      integer     NULL,
    body        text        NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (api_key_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
