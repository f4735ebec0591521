-- Why a webhook is DISABLED, so that its owner is told (docs/decisions.md, Pausing a webhook):
-- 'failing' (disabled after failing for the disable-after period), 'key_revoked' (its API key
-- was revoked; it cannot be enabled again) or 'manual' (paused by its owner). NULL unless
-- DISABLED. Webhooks disabled before this column existed get 'key_revoked' when their key is
-- revoked, else 'failing' (the only two ways there were).
ALTER TABLE webhook_subscriptions ADD COLUMN disabled_reason text NULL
    CHECK (disabled_reason IN ('failing', 'key_revoked', 'manual'));

UPDATE webhook_subscriptions s
SET disabled_reason = CASE
        WHEN EXISTS (SELECT 1 FROM api_keys k WHERE k.id = s.api_key_id AND k.revoked_at IS NOT NULL)
            THEN 'key_revoked'
        ELSE 'failing'
    END
WHERE s.status = 'DISABLED';

ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_disabled_reason_check2
    CHECK ((status = 'DISABLED') = (disabled_reason IS NOT NULL));
