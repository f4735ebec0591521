'use strict';

// Samples shared by more than one action; the tests compare their keys with real answers.

/** A client as the core API and the client search answer it. */
const CLIENT_SAMPLE = {
  id: '0190d5a0-0000-7000-8000-000000000001',
  name: 'Acme',
  type: 'company',
  status: 'active',
  email: 'billing@acme.example',
  phone: null,
  address: null,
  note: null,
  currency: 'USD',
  created_at: '2026-01-05T09:00:00Z',
  updated_at: '2026-01-05T09:00:00Z',
};

/** A time entry as the core API answers it. */
const ENTRY_SAMPLE = {
  id: '0190d5a0-0000-7000-8000-000000000010',
  user_id: '0190d5a0-0000-7000-8000-0000000000bb',
  source: 'timer',
  description: 'Design review',
  project_id: null,
  task_id: null,
  tag_ids: [],
  billable: true,
  start: '2026-01-05T09:00:00Z',
  end: null,
  duration: null,
  running: true,
  created_at: '2026-01-05T09:00:00Z',
  updated_at: '2026-01-05T09:00:00Z',
  pricing: {
    currency: 'USD',
    billable_rate_minor: 9000,
    billable_amount_minor: 0,
    cost_rate_minor: null,
    cost_amount_minor: 0,
    rate_scope: 'workspace',
    rate_id: '0190d5a0-0000-7000-8000-000000000020',
    rounded_seconds: 0,
    invoice_id: null,
    locked: false,
  },
};

/** A task of a project. */
const TASK_SAMPLE = {
  id: '0190d5a0-0000-7000-8000-000000000003',
  project_id: '0190d5a0-0000-7000-8000-000000000002',
  name: 'Design',
  created_at: '2026-01-05T09:00:00Z',
  updated_at: '2026-01-05T09:00:00Z',
};

/** A tag. */
const TAG_SAMPLE = {
  id: '0190d5a0-0000-7000-8000-000000000004',
  name: 'urgent',
  created_at: '2026-01-05T09:00:00Z',
};

/** A member of the workspace. */
const MEMBER_SAMPLE = {
  id: '0190d5a0-0000-7000-8000-0000000000bb',
  name: 'Ada',
  email: 'ada@example.com',
  role: 'member',
};

module.exports = { CLIENT_SAMPLE, ENTRY_SAMPLE, MEMBER_SAMPLE, TAG_SAMPLE, TASK_SAMPLE };
