-- When a membership last changed (joined, or its role changed): the members list's
-- `updated_since` (docs/integration-guide.md, section 2a) compares against it. A membership in use
-- last changed, as far as anyone knows, when it was made. The store writes the column itself;
-- the default serves rows written by hand (operators' scripts, fixtures).
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS updated_at timestamptz NULL;
UPDATE memberships SET updated_at = created_at WHERE updated_at IS NULL;
ALTER TABLE memberships ALTER COLUMN updated_at SET DEFAULT now();
ALTER TABLE memberships ALTER COLUMN updated_at SET NOT NULL;
