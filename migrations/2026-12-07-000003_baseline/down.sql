-- Undoes up.sql: the replaceable functions and triggers that `timetrack migrate` installed (their
-- schema; the triggers go with the functions they run), then every table, dependents first. The
-- extensions stay: they may have been there before, and other schemas may use them.
DROP SCHEMA IF EXISTS timetrack_code CASCADE;
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
DROP TABLE report_day_totals;
DROP TABLE time_entry_tags;
DROP TABLE time_entries;
DROP TABLE invoice_sequences;
DROP TABLE invoice_payments;
DROP TABLE invoice_lines;
DROP TABLE invoices;
DROP TABLE rates;
DROP TABLE tags;
DROP TABLE tasks;
DROP TABLE projects;
DROP TABLE clients;
DROP TABLE api_keys;
DROP TABLE memberships;
DROP TABLE users;
DROP TABLE workspaces;
