-- Invoice events (docs/billing.md, "Invoice events"): their types in the outbox, and the index
-- housekeeping reads to announce overdue invoices. (A database that took an early text of
-- 000004 has both already: each statement here stands either way.)

ALTER TABLE events DROP CONSTRAINT events_event_type_check;
ALTER TABLE events ADD CONSTRAINT events_event_type_check CHECK (event_type IN (
    'TIMER_STARTED', 'TIMER_STOPPED', 'TIME_ENTRY_CREATED', 'CLIENT_CREATED',
    'TIME_ENTRY_UPDATED', 'TIME_ENTRY_DELETED', 'CLIENT_UPDATED', 'CLIENT_DELETED',
    'PROJECT_CREATED', 'PROJECT_UPDATED', 'PROJECT_DELETED',
    'WEBHOOK_FAILING', 'WEBHOOK_DISABLED', 'WEBHOOK_RECOVERED', 'WEBHOOK_TEST',
    'INVOICE_CREATED', 'INVOICE_ISSUED', 'INVOICE_VOIDED', 'INVOICE_PAID', 'INVOICE_OVERDUE'));

CREATE INDEX IF NOT EXISTS invoices_overdue_idx ON invoices (due_date)
    WHERE status = 'issued' AND overdue_at IS NULL;
