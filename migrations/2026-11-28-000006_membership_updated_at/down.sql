-- Undoes up.sql.
ALTER TABLE memberships DROP COLUMN updated_at;
