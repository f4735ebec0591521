-- Undoes up.sql: the index goes, and the invoice events with their types.
DROP INDEX invoices_overdue_idx;
DELETE FROM events WHERE event_type LIKE 'INVOICE\_%';
ALTER TABLE events DROP CONSTRAINT events_event_type_check;
ALTER TABLE events ADD CONSTRAINT events_event_type_check CHECK (event_type IN (
    'TIMER_STARTED', 'TIMER_STOPPED', 'TIME_ENTRY_CREATED', 'CLIENT_CREATED',
    'TIME_ENTRY_UPDATED', 'TIME_ENTRY_DELETED', 'CLIENT_UPDATED', 'CLIENT_DELETED',
    'PROJECT_CREATED', 'PROJECT_UPDATED', 'PROJECT_DELETED',
    'WEBHOOK_FAILING', 'WEBHOOK_DISABLED', 'WEBHOOK_RECOVERED', 'WEBHOOK_TEST'));
