-- The streak changes the domain decided for a round, applied (functions/apply_streaks.sql).
SELECT timetrack_code.apply_streaks(:subscription_ids, :streak_starts, :streak_failures, :forget_told,
                               :back_since, :due_at, :bring_limit)
