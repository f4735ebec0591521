-- The installation's key for showing installation-wide numbers to tenants (delivery ids, the
-- feed's positions) through a keyed permutation (ADR 0018). One row, made here with 256 bits from
-- the server's strong random source (two random version-4 UUIDs, 244 of them random), so that
-- every process on this database shows a number the same way, whatever its secret key.
CREATE TABLE installation (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    mask_key bytea NOT NULL CHECK (length(mask_key) = 32)
);
INSERT INTO installation (mask_key)
VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));
