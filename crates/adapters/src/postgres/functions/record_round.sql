-- A round of attempts recorded (timetrack_code.record_attempts), then the streaks it may change
-- returned, locked (timetrack_code.lock_streaks): the first statement of a round that has streaks to
-- decide. The arguments are timetrack_code.record_attempts's.
CREATE FUNCTION timetrack_code.record_round(
    delivery_ids bigint[], subscription_ids text[], attempt_numbers int[],
    started timestamptz[], latency_ms int[], codes int[], errors text[], excerpts text[],
    statuses text[], next_at timestamptz[], finished timestamptz[], done bool[], tests bool[],
    workspace_ids uuid[], not_before timestamptz[], lossy bool[], signatures text[],
    custom_headers text[])
RETURNS TABLE (subscription_id text, failing_since timestamptz, failing_attempts int,
               recovered_at timestamptz)
LANGUAGE plpgsql
AS $fn$
BEGIN
    PERFORM timetrack_code.record_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                                      $14, $15, $16, $17, $18);
    RETURN QUERY SELECT * FROM timetrack_code.lock_streaks($2, $13, $12);
END
$fn$;
