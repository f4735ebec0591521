-- A rate change re-prices every entry it reaches in one statement, and each new price is a new
-- version of the entry's row. While the rate ids were indexed, every new version went into all
-- of the table's indexes (a rate reaching 80,000 entries wrote 816,000 WAL records and 395 MB of
-- WAL, nearly all of it index entries). Without an index on a price column, and with room left
-- on each page, PostgreSQL writes the new version beside the old one and no index changes (a
-- HOT update): ADR 0025.
--
-- The entries a rate priced are found without these indexes: by the rate's own target (its
-- member, client, project or task) and first day, then by the rate ids among those.
DROP INDEX time_entries_billable_rate_idx;
DROP INDEX time_entries_cost_rate_idx;

-- A fifth of each page is kept free for the new versions of its rows. Pages written from now on
-- keep it; pages already full gain it as their rows move (a database in use is not rewritten
-- here: `VACUUM FULL time_entries` does it at once, holding the table for as long as it takes).
ALTER TABLE time_entries SET (fillfactor = 80);
