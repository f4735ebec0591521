-- Undoes up.sql: the settings and the roles go (who was owner is lost).
ALTER TABLE workspaces
    DROP COLUMN members_manage_catalog,
    DROP COLUMN members_see_rates,
    DROP COLUMN rounding_minutes,
    DROP COLUMN rounding_mode,
    DROP COLUMN invoice_number_pattern,
    DROP COLUMN payment_terms_days,
    DROP COLUMN lock_before;
DROP INDEX memberships_workspace_created_idx;
ALTER TABLE memberships DROP COLUMN role;
