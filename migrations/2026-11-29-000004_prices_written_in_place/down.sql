ALTER TABLE time_entries RESET (fillfactor);
CREATE INDEX time_entries_billable_rate_idx ON time_entries (billable_rate_id)
    WHERE billable_rate_id IS NOT NULL;
CREATE INDEX time_entries_cost_rate_idx ON time_entries (cost_rate_id)
    WHERE cost_rate_id IS NOT NULL;
