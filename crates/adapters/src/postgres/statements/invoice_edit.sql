-- A draft's new notes, dates, percentages and totals.
UPDATE invoices
SET notes = :notes, issue_date = :issue_date, due_date = :due_date,
    discount_percent_milli = :discount_percent_milli, tax_percent_milli = :tax_percent_milli,
    subtotal_minor = :subtotal_minor, discount_minor = :discount_minor, tax_minor = :tax_minor,
    total_minor = :total_minor
WHERE workspace_id = :workspace_id AND id = :id
