-- Links the entries :entry_ids to invoice :invoice_id: they are locked from now on.
UPDATE time_entries SET invoice_id = :invoice_id
WHERE workspace_id = :workspace_id AND id = ANY (:entry_ids)
