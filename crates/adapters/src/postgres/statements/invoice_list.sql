-- A page of the invoices of :workspace_id, newest first, after the cursor (:after_at, :after_id)
-- if given, filtered by :status, :client_id and :payment_status when not null. The payment
-- status is derived as `Invoice::payment_status` derives it, on the workspace's day :today.
-- (After invoice_columns.sql.)
FROM invoices i
CROSS JOIN LATERAL (
    SELECT coalesce(sum(p.amount_minor), 0) AS paid
    FROM invoice_payments p
    WHERE p.workspace_id = i.workspace_id AND p.invoice_id = i.id
) pay
WHERE i.workspace_id = :workspace_id
  AND (:status::text IS NULL OR i.status = :status)
  AND (:client_id::uuid IS NULL OR i.client_id = :client_id)
  AND (:payment_status::text IS NULL OR :payment_status = CASE
        WHEN i.status <> 'draft' AND i.total_minor - pay.paid <= 0 THEN 'paid'
        WHEN i.status = 'issued' AND :today::date > i.due_date THEN 'overdue'
        WHEN pay.paid > 0 THEN 'partially_paid'
        ELSE 'unpaid' END)
  AND (:after_at::timestamptz IS NULL OR (i.created_at, i.id) < (:after_at, :after_id))
ORDER BY i.created_at DESC, i.id DESC
LIMIT :limit
