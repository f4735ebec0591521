-- Undoes up.sql: the entries lose their prices, the rates go.
DROP INDEX time_entries_cost_rate_idx;
DROP INDEX time_entries_billable_rate_idx;
ALTER TABLE time_entries
    DROP CONSTRAINT time_entries_cost_rate_whole,
    DROP CONSTRAINT time_entries_billable_rate_whole,
    DROP COLUMN price_currency,
    DROP COLUMN billable_rate_id,
    DROP COLUMN billable_rate_scope,
    DROP COLUMN billable_rate_minor,
    DROP COLUMN cost_rate_id,
    DROP COLUMN cost_rate_scope,
    DROP COLUMN cost_rate_minor;
DROP TABLE rates;
