-- Undoes up.sql.
DROP INDEX time_entries_project_start_idx;
