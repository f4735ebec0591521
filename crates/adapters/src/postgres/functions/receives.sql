-- Whether events of type `event_type` in `workspace` may reach user `receiver`'s webhooks: an
-- invoice event only while the receiver is an owner or an admin of the workspace (invoices show
-- amounts members may not see, docs/billing.md); every other type always. Checked where a
-- delivery is queued: the outbox, replay and resend. A plain SQL expression, so the planner
-- inlines it, and the membership is read only for invoice events.
CREATE FUNCTION timetrack_code.receives(event_type text, workspace uuid, receiver uuid)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $fn$
    SELECT left(event_type, 8) <> 'INVOICE_'
        OR EXISTS (SELECT 1 FROM memberships m
                   WHERE m.workspace_id = workspace AND m.user_id = receiver
                     AND m.role IN ('owner', 'admin'))
$fn$;
