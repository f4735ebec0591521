-- Lines of invoice :invoice_id, one per element of the arrays :ids..:amounts; each line's
-- entry_ids gathered from the pairs (:entries[i], :entry_lines[i]), in their order.
WITH m AS (
    SELECT m.line, array_agg(m.entry ORDER BY m.ord) AS ids
    FROM unnest(:entries::uuid[], :entry_lines::uuid[]) WITH ORDINALITY AS m (entry, line, ord)
    GROUP BY m.line
)
INSERT INTO invoice_lines (id, workspace_id, invoice_id, position, kind, description,
                           quantity_milli, unit_price_minor, amount_minor, entry_ids)
SELECT l.id, :workspace_id, :invoice_id, l.position, l.kind, l.description, l.quantity,
       l.price, l.amount, coalesce(m.ids, '{}')
FROM unnest(:ids::uuid[], :positions::int[], :kinds::text[], :descriptions::text[],
            :quantities::bigint[], :prices::bigint[], :amounts::bigint[])
     AS l (id, position, kind, description, quantity, price, amount)
LEFT JOIN m ON m.line = l.id
