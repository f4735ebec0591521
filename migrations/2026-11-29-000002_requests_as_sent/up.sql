-- What a delivery's request was as sent (docs/decisions.md, The request as sent). Each attempt
-- keeps the `webhook-signature` header it was sent with: the other headers follow from the
-- delivery and the second the attempt started, but the signature depends on the secret of that
-- moment, which is not kept (a rotation replaces it). NULL for attempts recorded before.
ALTER TABLE delivery_attempts ADD COLUMN signature text NULL;

-- A test delivery sent as another event type (`POST .../test` with `event_type`): its event is a
-- WEBHOOK_TEST event, a test everywhere it is shown or counted, whose body is that type's catalog
-- sample and whose test delivery is sent with that type in `X-Webhook-Event`. NULL for every
-- other event. The check is NOT VALID: the rows there are hold NULL, and validating them would
-- read the whole outbox under this migration's lock.
ALTER TABLE events ADD COLUMN sent_as text NULL;
ALTER TABLE events ADD CONSTRAINT events_sent_as_check
    CHECK (sent_as IS NULL OR (event_type = 'WEBHOOK_TEST' AND sent_as <> 'WEBHOOK_TEST'))
    NOT VALID;
