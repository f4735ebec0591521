-- The outbox, as the tail of a statement whose own common table expressions come first: the
-- events, and one pending delivery per active subscription of their workspace listing their type
-- whose filters the event passes (a filter the event has no value for does not pass) and whose
-- owner may receive it (functions/receives.sql: invoice events to owners and admins). Returns
-- one row, `queued`: the deliveries it queued.
e AS (
    INSERT INTO events (id, workspace_id, event_type, body, created_at, project_id, client_id,
                        user_id, billable, ordering_key)
    SELECT * FROM unnest(:event_ids::uuid[], :event_workspaces::uuid[], :event_types::text[],
                         :event_bodies::text[], :event_times::timestamptz[],
                         :event_projects::uuid[], :event_clients::uuid[], :event_users::uuid[],
                         :event_billables::bool[], :event_keys::text[])
    RETURNING id, workspace_id, event_type, created_at, project_id, client_id, user_id, billable,
              ordering_key, seq
), d AS (
    INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at,
                            created_at, updated_at, ordering_key, sequence)
    SELECT e.id, s.id, s.workspace_id, 'PENDING', e.created_at, e.created_at, e.created_at,
           e.ordering_key, e.seq
    FROM e JOIN webhook_subscriptions s
      ON s.workspace_id = e.workspace_id AND s.status = 'ACTIVE' AND e.event_type = ANY (s.events)
     AND (s.filter_project_ids IS NULL OR e.project_id = ANY (s.filter_project_ids))
     AND (s.filter_client_ids IS NULL OR e.client_id = ANY (s.filter_client_ids))
     AND (s.filter_user_ids IS NULL OR e.user_id = ANY (s.filter_user_ids))
     AND (s.filter_billable IS NULL OR e.billable = s.filter_billable)
     AND timetrack_code.receives(e.event_type, s.workspace_id, s.user_id)
    RETURNING 1
)
SELECT count(*) AS queued FROM d
