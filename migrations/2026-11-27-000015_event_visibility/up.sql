-- Who may see an event: NULL for every member of its workspace; for an event about a webhook (a
-- notice to its owner, a test delivery), the webhook's owner alone, since it carries the
-- webhook's URL, a capability (subscriptions.md section 1). Every path that selects events for
-- someone (the feed, replay, resend, test, the delivery log) applies one rule to it, the
-- function timetrack_shows_to.
ALTER TABLE events ADD COLUMN visible_to uuid NULL;
UPDATE events e SET visible_to = s.user_id
FROM webhook_subscriptions s
WHERE s.id = e.about_webhook_id AND e.about_webhook_id IS NOT NULL;
-- Deliveries of such an event to another member's webhook (replays queued them) are not sent.
UPDATE deliveries d SET status = 'CANCELLED', updated_at = now()
FROM events e, webhook_subscriptions s
WHERE e.id = d.event_id AND s.id = d.subscription_id AND d.status = 'PENDING'
  AND e.visible_to IS NOT NULL AND e.visible_to <> s.user_id;
DELETE FROM delivery_leases l
USING deliveries d
WHERE d.id = l.delivery_id AND d.status = 'CANCELLED';
