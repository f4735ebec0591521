-- The next value of the workspace's sequence :key. The row lock serialises concurrent issues;
-- a rollback gives the value back, so numbers are gap-free.
INSERT INTO invoice_sequences AS s (workspace_id, key, last_value)
VALUES (:workspace_id, :key, 1)
ON CONFLICT (workspace_id, key) DO UPDATE SET last_value = s.last_value + 1
RETURNING s.last_value
