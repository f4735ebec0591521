-- Undoes up.sql.
DROP TRIGGER report_day_totals_on_settings ON workspaces;
DROP TRIGGER report_day_totals_on_insert ON time_entries;
DROP TRIGGER report_day_totals_on_update ON time_entries;
DROP TRIGGER report_day_totals_on_delete ON time_entries;
DROP FUNCTION report_day_totals_on_settings();
DROP FUNCTION report_day_totals_on_entries();
DROP FUNCTION report_day_totals_add(report_day_totals[]);
DROP FUNCTION report_day_totals_rebuild(uuid);
DROP FUNCTION report_day_bucket(time_entries, integer);
DROP TABLE report_day_totals;
