-- Keys with scopes and an expiry (integrations.md section 4). `scopes` lists what a key may do
-- by the scopes' published names; NULL is every scope (the keys made before, and the admin
-- CLI's). `expires_at` is when the key stops working; NULL is never.
ALTER TABLE api_keys ADD COLUMN scopes text[] NULL;
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz NULL;
