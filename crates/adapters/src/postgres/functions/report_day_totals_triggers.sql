-- The triggers that keep report_day_totals the sum of the stopped entries (ADR 0024): one per
-- kind of write of time_entries (a trigger with transition tables has one event), each running
-- timetrack_code.report_day_totals_on_entries once per statement, and one on workspaces that sums
-- a workspace's totals again when its time zone or rounding changes. Created after the functions,
-- in the same transaction; dropping the schema drops them (they depend on its functions).
CREATE TRIGGER report_day_totals_on_insert AFTER INSERT ON time_entries
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION timetrack_code.report_day_totals_on_entries();
CREATE TRIGGER report_day_totals_on_update AFTER UPDATE ON time_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION timetrack_code.report_day_totals_on_entries();
CREATE TRIGGER report_day_totals_on_delete AFTER DELETE ON time_entries
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION timetrack_code.report_day_totals_on_entries();
CREATE TRIGGER report_day_totals_on_settings AFTER UPDATE OF timezone, rounding_minutes, rounding_mode
    ON workspaces
    FOR EACH ROW
    WHEN (OLD.timezone IS DISTINCT FROM NEW.timezone
          OR OLD.rounding_minutes IS DISTINCT FROM NEW.rounding_minutes
          OR OLD.rounding_mode IS DISTINCT FROM NEW.rounding_mode)
    EXECUTE FUNCTION timetrack_code.report_day_totals_on_settings();
