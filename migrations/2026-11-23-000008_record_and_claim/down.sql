DROP FUNCTION timetrack_record_and_claim(uuid[], text[], int[], timestamptz[], int[], int[],
                                         text[], text[], text[], timestamptz[], timestamptz[],
                                         bool[], timestamptz, timestamptz, bigint, bigint);
