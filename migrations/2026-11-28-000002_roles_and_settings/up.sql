-- Roles and the workspace's billing settings (docs/billing.md). The first schema change that
-- existing workspaces carry across rather than being made anew: every membership gets a role, and
-- the earliest member of each workspace (by membership, then user id) becomes its owner, the
-- others members, so every workspace that has members keeps an owner.

ALTER TABLE memberships
    ADD COLUMN role text NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'admin', 'member'));
UPDATE memberships m SET role = 'owner'
FROM (
    SELECT DISTINCT ON (workspace_id) workspace_id, user_id
    FROM memberships
    ORDER BY workspace_id, created_at, user_id
) first
WHERE m.workspace_id = first.workspace_id AND m.user_id = first.user_id;
-- The members list, oldest membership first, and the owners count a role change checks.
CREATE INDEX memberships_workspace_created_idx ON memberships (workspace_id, created_at, user_id);

-- The settings, one column each, with the rules the API checks repeated as constraints.
ALTER TABLE workspaces
    ADD COLUMN members_manage_catalog boolean  NOT NULL DEFAULT true,
    ADD COLUMN members_see_rates      boolean  NOT NULL DEFAULT false,
    ADD COLUMN rounding_minutes       smallint NOT NULL DEFAULT 0 CHECK (rounding_minutes BETWEEN 0 AND 60),
    ADD COLUMN rounding_mode          text     NOT NULL DEFAULT 'nearest'
        CHECK (rounding_mode IN ('up', 'down', 'nearest')),
    ADD COLUMN invoice_number_pattern text     NOT NULL DEFAULT '{YYYY}-{SEQ:4}'
        CHECK (length(invoice_number_pattern) BETWEEN 1 AND 64),
    ADD COLUMN payment_terms_days     smallint NOT NULL DEFAULT 30 CHECK (payment_terms_days BETWEEN 0 AND 365),
    ADD COLUMN lock_before            date     NULL;
