-- The streak changes the domain decided for a round, applied, then due deliveries claimed
-- (functions/apply_and_claim.sql).
SELECT * FROM timetrack_code.apply_and_claim(:subscription_ids, :streak_starts, :streak_failures,
                                        :forget_told, :back_since, :due_at, :bring_limit,
                                        :recorded, :now, :lease_until, :limit,
                                        :per_subscription, :per_workspace, :held_workspaces,
                                        :held_counts, :unshared, :always)
