-- The type a delivery is sent, listed and filtered as: a test sent as another type (`POST
-- .../test` with an `event_type`; events.sent_as) goes as that type;
-- any other delivery, a resend of such a test included, as its event's type (a test's own is
-- WEBHOOK_TEST). One rule for the claim that sends it (claim_deliveries), the delivery log and an
-- event's deliveries (statements/delivery_log.sql, event_deliveries.sql). A plain SQL expression,
-- so the planner inlines it.
CREATE FUNCTION timetrack_code.sent_type(p_kind text, p_event_type text, p_sent_as text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $fn$
    SELECT CASE WHEN p_kind = 'test' THEN coalesce(p_sent_as, p_event_type) ELSE p_event_type END
$fn$;
