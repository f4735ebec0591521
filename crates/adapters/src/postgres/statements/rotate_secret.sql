-- A new signing secret for a subscription that is not deleted: the current one becomes the
-- previous one, signing beside it until `previous_expires_at` (the one before is dropped), or,
-- when that time is not later than `at`, no previous secret is kept.
UPDATE webhook_subscriptions
SET previous_secret = CASE WHEN :previous_expires_at > :at THEN secret END,
    previous_secret_expires_at = CASE WHEN :previous_expires_at > :at
                                      THEN :previous_expires_at::timestamptz END,
    secret = :secret,
    updated_at = :at
WHERE id = :id AND status <> 'DELETED'
