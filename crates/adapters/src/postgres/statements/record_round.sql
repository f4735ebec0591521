-- A round of attempts recorded; returns the streaks it may change, locked
-- (functions/record_round.sql).
SELECT * FROM timetrack_code.record_round(:delivery_ids, :subscription_ids, :attempts, :started,
                                     :latency_ms, :codes, :errors, :excerpts, :statuses,
                                     :next_at, :finished, :done, :tests, :workspace_ids,
                                     :not_before, :lossy, :signatures, :custom_headers)
