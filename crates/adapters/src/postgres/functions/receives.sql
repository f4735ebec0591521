-- Whether events of type `event_type` in `workspace` may reach user `receiver`'s webhooks: an
-- invoice event only while the receiver is an owner or an admin of the workspace (invoices show
-- amounts members may not see, docs/billing.md); every other type always. Checked where a
-- delivery is queued: the outbox, replay and resend, once per delivery.
--
-- PL/pgSQL rather than a plain SQL expression: a SQL function holding a subquery is not inlined,
-- and PostgreSQL then planned its statement again on every call (11 µs a delivery, a tenth of the
-- outbox's work at ten subscriptions). Here the type is tested first as a simple expression,
-- without the executor, and the membership is read, through a plan kept for the connection, only
-- for invoice events.
CREATE FUNCTION timetrack_code.receives(event_type text, workspace uuid, receiver uuid)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $fn$
BEGIN
    IF left(event_type, 8) <> 'INVOICE_' THEN
        RETURN true;
    END IF;
    RETURN EXISTS (SELECT 1 FROM memberships m
                   WHERE m.workspace_id = receives.workspace AND m.user_id = receives.receiver
                     AND m.role IN ('owner', 'admin'));
END
$fn$;
