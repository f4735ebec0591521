-- Takes the pricing lock of a workspace for the rest of the transaction: shared for a write of
-- entries (many at once), exclusive for a change that re-prices many entries (a rate added or
-- deleted, a currency or time zone changed). Taken first, before any row is written, so a write
-- and a re-pricing never wait on each other's rows while holding the lock the other needs; and
-- each prices with a snapshot taken after the other committed, so an entry's stored price is
-- always that of the entry and the rates as they ended up, never a mix of before and after.
CREATE FUNCTION timetrack_code.pricing_lock(p_workspace uuid, p_exclusive boolean)
RETURNS void
LANGUAGE plpgsql
AS $fn$
BEGIN
    IF p_exclusive THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('timetrack pricing ' || p_workspace::text, 0));
    ELSE
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('timetrack pricing ' || p_workspace::text, 0));
    END IF;
END
$fn$;
