-- Undoes up.sql: entries lose their invoice links, the invoices go.
DROP INDEX time_entries_invoice_idx;
ALTER TABLE time_entries
    DROP CONSTRAINT time_entries_invoice_fkey,
    DROP COLUMN invoice_id;
DROP TABLE invoice_sequences;
DROP TABLE invoice_payments;
DROP TABLE invoice_lines;
DROP TABLE invoices;
