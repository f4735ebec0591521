-- A new draft.
INSERT INTO invoices (id, workspace_id, number, status, client_id, client_name, client_address,
                      issuer_name, currency, period_from, period_to, group_by, issue_date,
                      due_date, discount_percent_milli, tax_percent_milli, subtotal_minor,
                      discount_minor, tax_minor, total_minor, notes, created_at, updated_at)
VALUES (:id, :workspace_id, NULL, 'draft', :client_id, :client_name, :client_address,
        :issuer_name, :currency, :period_from, :period_to, :group_by, :issue_date,
        :due_date, :discount_percent_milli, :tax_percent_milli, :subtotal_minor,
        :discount_minor, :tax_minor, :total_minor, :notes, :created_at, :created_at)
