-- Whether an event whose `visible_to` is given shows to user `viewer`: an event about a webhook
-- (a notice to its owner, a test delivery) shows to the webhook's owner alone, since it carries
-- the webhook's URL, a capability; every other event to every member of its workspace. The one
-- statement of this rule: the feed, replay, resend, test deliveries, notices and the delivery
-- log all call it. A plain SQL expression, so the planner inlines it.
CREATE FUNCTION timetrack_code.shows_to(visible_to uuid, viewer uuid)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT visible_to IS NULL OR visible_to = viewer
$fn$;
