-- Client search of three characters or more, in one round trip, planned for its pattern.
--
-- The trigram index no longer keeps a pending list. With fastupdate on (the default), new names
-- wait in an unordered list of up to 4 MB that every trigram search reads whole until vacuum
-- merges it: after a burst of client creation (the benchmark's 10,000 creates in another
-- workspace), a search that matched nothing read some 330 pages instead of a few, and its p99
-- at 8 concurrent searches went from about 3 ms to 20-30 ms. Each insert now updates the index
-- itself; any list left from before is merged here.
ALTER INDEX clients_workspace_name_trgm_idx SET (fastupdate = off);
SELECT gin_clean_pending_list('clients_workspace_name_trgm_idx'::regclass);

-- The best plan depends on the pattern: the trigram index for a rare one, the newest-first index
-- for a common one. The search used to be sent as a one-off statement so that it was planned for
-- its pattern, which costs a round trip to parse and describe it before the one that runs it.
-- Called through a statement the connection keeps, this function runs in one round trip, and
-- force_custom_plan still plans its query for the pattern of each call.
CREATE FUNCTION timetrack_find_clients(p_workspace uuid, p_pattern text, p_limit bigint)
RETURNS SETOF clients
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_custom_plan
AS $fn$
BEGIN
    RETURN QUERY
        SELECT * FROM clients
        WHERE workspace_id = p_workspace AND name_lower LIKE p_pattern
        ORDER BY created_at DESC, id DESC
        LIMIT p_limit;
END
$fn$;
