-- Undoes up.sql: the replaceable functions that `timetrack migrate` installed (their schema, and
-- any function an older layout recorded by its signature), then every table, dependents first.
-- The extensions stay: they may have been there before, and other schemas may use them.
DROP SCHEMA IF EXISTS timetrack_code CASCADE;
DO $$
DECLARE
    f text;
BEGIN
    FOR f IN SELECT signature FROM timetrack_functions WHERE signature LIKE '%(%' LOOP
        EXECUTE 'DROP FUNCTION IF EXISTS ' || f;
    END LOOP;
END $$;
DROP TABLE installation;
DROP TABLE timetrack_functions;
DROP TABLE idempotency_keys;
DROP TABLE rate_limit_hits;
DROP TABLE audit_log;
DROP TABLE delivery_attempts;
DROP TABLE delivery_leases;
DROP TABLE deliveries;
DROP TABLE events;
DROP TABLE webhook_subscriptions;
DROP TABLE time_entry_tags;
DROP TABLE time_entries;
DROP TABLE tags;
DROP TABLE tasks;
DROP TABLE projects;
DROP TABLE clients;
DROP TABLE api_keys;
DROP TABLE memberships;
DROP TABLE users;
DROP TABLE workspaces;
