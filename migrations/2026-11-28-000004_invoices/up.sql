-- Invoices from tracked time (docs/billing.md): the invoice, its lines, its payments, the
-- workspace's number sequences, and the link from each billed entry to its invoice.

-- An invoice. The client's name and address and the issuer's name are copied when it is created
-- and again when it is issued, so an issued invoice never changes with the catalog. Amounts are
-- integer minor units of `currency`; percentages are thousandths of a percent (12.5 % = 12500).
CREATE TABLE invoices (
    id                     uuid        NOT NULL,
    workspace_id           uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    number                 text        NULL,
    status                 text        NOT NULL CHECK (status IN ('draft', 'issued', 'void')),
    client_id              uuid        NOT NULL,
    client_name            text        NOT NULL,
    client_address         text        NULL,
    issuer_name            text        NOT NULL,
    currency               text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    period_from            date        NOT NULL,
    period_to              date        NOT NULL,
    group_by               text[]      NOT NULL,
    issue_date             date        NULL,
    due_date               date        NULL,
    discount_percent_milli integer     NOT NULL CHECK (discount_percent_milli BETWEEN 0 AND 100000),
    tax_percent_milli      integer     NOT NULL CHECK (tax_percent_milli BETWEEN 0 AND 100000),
    subtotal_minor         bigint      NOT NULL CHECK (subtotal_minor >= 0),
    discount_minor         bigint      NOT NULL CHECK (discount_minor >= 0),
    tax_minor              bigint      NOT NULL CHECK (tax_minor >= 0),
    total_minor            bigint      NOT NULL CHECK (total_minor >= 0),
    notes                  text        NULL,
    void_reason            text        NULL,
    issued_at              timestamptz NULL,
    voided_at              timestamptz NULL,
    -- When INVOICE_OVERDUE was written for it (once per invoice).
    overdue_at             timestamptz NULL,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    CONSTRAINT invoices_number_of_status CHECK ((number IS NULL) = (status = 'draft')),
    CONSTRAINT invoices_period CHECK (period_from <= period_to)
);
-- Numbers are never reused: not after a void, not after a change of pattern.
CREATE UNIQUE INDEX invoices_number_key ON invoices (workspace_id, number) WHERE number IS NOT NULL;
CREATE INDEX invoices_workspace_created_idx ON invoices (workspace_id, created_at DESC, id DESC);

-- A line: time (the entries it bills, all at one unit price) or an extra line. `quantity_milli`
-- is thousandths (hours for time lines).
CREATE TABLE invoice_lines (
    id               uuid    NOT NULL,
    workspace_id     uuid    NOT NULL,
    invoice_id       uuid    NOT NULL,
    position         integer NOT NULL,
    kind             text    NOT NULL CHECK (kind IN ('time', 'extra')),
    description      text    NOT NULL,
    quantity_milli   bigint  NOT NULL CHECK (quantity_milli >= 0),
    unit_price_minor bigint  NOT NULL CHECK (unit_price_minor >= 0),
    amount_minor     bigint  NOT NULL CHECK (amount_minor >= 0),
    -- The entries the line billed, kept after a void releases them.
    entry_ids        uuid[]  NOT NULL,
    PRIMARY KEY (workspace_id, invoice_id, id),
    UNIQUE (workspace_id, invoice_id, position),
    FOREIGN KEY (workspace_id, invoice_id) REFERENCES invoices (workspace_id, id) ON DELETE CASCADE
);

CREATE TABLE invoice_payments (
    id           uuid        NOT NULL,
    workspace_id uuid        NOT NULL,
    invoice_id   uuid        NOT NULL,
    amount_minor bigint      NOT NULL CHECK (amount_minor > 0),
    paid_on      date        NOT NULL,
    note         text        NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, invoice_id, id),
    FOREIGN KEY (workspace_id, invoice_id) REFERENCES invoices (workspace_id, id) ON DELETE CASCADE
);

-- The last number given per workspace and sequence: the pattern rendered without its {SEQ:n}
-- ("2026-" for {YYYY}-{SEQ:4}), so a sequence restarts with each year or month the pattern names.
-- Taken and advanced in the issue's transaction: gap-free, and serial under concurrent issues.
CREATE TABLE invoice_sequences (
    workspace_id uuid   NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    key          text   NOT NULL,
    last_value   bigint NOT NULL CHECK (last_value > 0),
    PRIMARY KEY (workspace_id, key)
);

-- The invoice (draft or issued) an entry is on: it locks the entry. A void or a draft's deletion
-- clears it.
ALTER TABLE time_entries
    ADD COLUMN invoice_id uuid NULL,
    ADD CONSTRAINT time_entries_invoice_fkey FOREIGN KEY (workspace_id, invoice_id)
        REFERENCES invoices (workspace_id, id);
CREATE INDEX time_entries_invoice_idx ON time_entries (workspace_id, invoice_id)
    WHERE invoice_id IS NOT NULL;
