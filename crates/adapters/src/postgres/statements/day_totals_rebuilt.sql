-- Every workspace's report day totals summed again by the rule just installed (functions.rs). No
-- entry or setting changes meanwhile: creating the triggers in this transaction took a lock on
-- time_entries and on workspaces that every writer of either waits for until it commits.
SELECT timetrack_code.report_day_totals_rebuild(id) FROM workspaces ORDER BY id
