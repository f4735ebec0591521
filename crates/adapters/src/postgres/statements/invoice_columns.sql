-- The columns of an invoice as `InvoiceRow` reads them, for the statements that begin with them
-- (invoice_get.sql, invoice_list.sql, invoice_newly_overdue.sql).
SELECT i.id, i.workspace_id, i.number, i.status, i.client_id, i.client_name, i.client_address,
       i.issuer_name, i.currency, i.period_from, i.period_to, i.group_by, i.issue_date,
       i.due_date, i.discount_percent_milli, i.tax_percent_milli, i.subtotal_minor,
       i.discount_minor, i.tax_minor, i.total_minor, i.notes, i.void_reason, i.created_at,
       i.updated_at
