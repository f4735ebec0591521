ALTER TABLE deliveries RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor,
                              autovacuum_vacuum_cost_delay);
DROP FUNCTION timetrack_record_attempts(uuid[], text[], int[], timestamptz[], int[], int[], text[],
                                        text[], text[], timestamptz[], timestamptz[], bool[]);
DROP FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint);
