-- A batch of attempts that neither end nor disable their subscription (functions/record_attempts.sql).
SELECT timetrack_record_attempts(:delivery_ids, :subscription_ids, :attempts, :started,
                                 :latency_ms, :codes, :errors, :excerpts, :statuses, :next_at,
                                 :finished, :done, :tests, :workspace_ids,
                                 :not_before, :lossy)
