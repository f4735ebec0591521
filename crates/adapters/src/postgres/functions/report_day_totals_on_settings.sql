-- A workspace whose time zone or rounding changed: its totals summed again, under its exclusive
-- pricing lock (the service takes it before the row; taken again here for any other writer).
CREATE FUNCTION timetrack_code.report_day_totals_on_settings()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    PERFORM timetrack_code.pricing_lock(NEW.id, true);
    PERFORM timetrack_code.report_day_totals_rebuild(NEW.id);
    RETURN NULL;
END
$fn$;
