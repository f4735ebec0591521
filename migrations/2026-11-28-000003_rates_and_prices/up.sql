-- Hourly rates and the price stored on each entry (docs/billing.md). Existing entries are priced
-- when the first rate reaching them is added; until then they have none.

-- A rate: an hourly amount in a currency's minor units, in force from a date (in the workspace's
-- time zone) until a later row of the same kind, scope, target and currency. `scope` names the
-- target ids it uses; the others are null. Rows are never changed, only added and deleted.
CREATE TABLE rates (
    id             uuid        NOT NULL,
    workspace_id   uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    kind           text        NOT NULL CHECK (kind IN ('billable', 'cost')),
    scope          text        NOT NULL
        CHECK (scope IN ('workspace', 'member', 'client', 'project', 'task', 'project_member')),
    user_id        uuid        NULL,
    client_id      uuid        NULL,
    project_id     uuid        NULL,
    task_id        uuid        NULL,
    currency       text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    -- At most 10^9 minor units an hour: ten years of seconds times it stays far inside 64 bits,
    -- and an entry's amount stays an exact JSON number (below 2^53).
    hourly_minor   bigint      NOT NULL CHECK (hourly_minor BETWEEN 0 AND 1000000000),
    effective_from date        NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (id, workspace_id),
    CONSTRAINT rates_workspace_id_id_key UNIQUE (workspace_id, id),
    CONSTRAINT rates_targets_of_scope CHECK (
        (user_id IS NOT NULL) = (scope IN ('member', 'project_member'))
        AND (client_id IS NOT NULL) = (scope = 'client')
        AND (project_id IS NOT NULL) = (scope IN ('project', 'project_member'))
        AND (task_id IS NOT NULL) = (scope = 'task')),
    CONSTRAINT rates_member_fkey FOREIGN KEY (workspace_id, user_id)
        REFERENCES memberships (workspace_id, user_id) ON DELETE CASCADE,
    CONSTRAINT rates_client_fkey FOREIGN KEY (workspace_id, client_id)
        REFERENCES clients (workspace_id, id) ON DELETE CASCADE,
    CONSTRAINT rates_project_fkey FOREIGN KEY (workspace_id, project_id)
        REFERENCES projects (workspace_id, id) ON DELETE CASCADE,
    CONSTRAINT rates_task_fkey FOREIGN KEY (workspace_id, task_id)
        REFERENCES tasks (workspace_id, id) ON DELETE CASCADE
);
-- One row per kind, scope, target, currency and date: a second is a conflict, not a tie.
CREATE UNIQUE INDEX rates_one_per_day_key ON rates
    (workspace_id, kind, scope, user_id, client_id, project_id, task_id, currency, effective_from)
    NULLS NOT DISTINCT;
CREATE INDEX rates_workspace_created_idx ON rates (workspace_id, created_at DESC, id DESC);

-- The price of an entry: its currency and, per kind, the rate it got and the row it came from
-- (null: no rate in force). Amounts are not stored: they follow the duration and the workspace's
-- rounding when read. Set by timetrack_code.price_entries in the transaction of every change that
-- can move it, never for a locked entry.
ALTER TABLE time_entries
    ADD COLUMN price_currency      text   NULL CHECK (price_currency ~ '^[A-Z]{3}$'),
    ADD COLUMN billable_rate_id    uuid   NULL,
    ADD COLUMN billable_rate_scope text   NULL,
    ADD COLUMN billable_rate_minor bigint NULL,
    ADD COLUMN cost_rate_id        uuid   NULL,
    ADD COLUMN cost_rate_scope     text   NULL,
    ADD COLUMN cost_rate_minor     bigint NULL,
    ADD CONSTRAINT time_entries_billable_rate_whole CHECK (
        (billable_rate_id IS NULL) = (billable_rate_minor IS NULL)
        AND (billable_rate_id IS NULL) = (billable_rate_scope IS NULL)),
    ADD CONSTRAINT time_entries_cost_rate_whole CHECK (
        (cost_rate_id IS NULL) = (cost_rate_minor IS NULL)
        AND (cost_rate_id IS NULL) = (cost_rate_scope IS NULL));
-- Deleting a rate re-prices the entries it priced: found by the rate.
CREATE INDEX time_entries_billable_rate_idx ON time_entries (billable_rate_id)
    WHERE billable_rate_id IS NOT NULL;
CREATE INDEX time_entries_cost_rate_idx ON time_entries (cost_rate_id)
    WHERE cost_rate_id IS NOT NULL;

-- Every entry gets its currency now; its rates come with the first rate that reaches it.
UPDATE time_entries e
SET price_currency = coalesce(
    (SELECT c.currency FROM projects p JOIN clients c ON c.workspace_id = p.workspace_id AND c.id = p.client_id
     WHERE p.workspace_id = e.workspace_id AND p.id = e.project_id),
    (SELECT w.currency FROM workspaces w WHERE w.id = e.workspace_id));
