-- A round of attempts that changes no streak recorded, then due deliveries claimed, in one
-- transaction (functions/record_and_claim.sql).
SELECT * FROM timetrack_code.record_and_claim(:delivery_ids, :subscription_ids, :attempts, :started,
                                         :latency_ms, :codes, :errors, :excerpts, :statuses,
                                         :next_at, :finished, :done, :tests, :workspace_ids,
                                         :not_before, :lossy, :signatures, :custom_headers, :now, :lease_until, :limit,
                                         :per_subscription, :per_workspace, :held_workspaces,
                                         :held_counts, :unshared, :always)
