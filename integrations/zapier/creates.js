'use strict';

// Creates: each answers the object timetrack made.

const { CLIENT_SAMPLE } = require('./lib/samples');

const PROJECT = {
  key: 'project_id',
  label: 'Project',
  dynamic: 'projects.id.name',
  search: 'find_project.id',
  altersDynamicFields: true,
};
const TASK = {
  key: 'task_id',
  label: 'Task',
  dynamic: 'tasks.id.name',
  helpText: 'A task of the project chosen above.',
};
const TAGS = { key: 'tag_ids', label: 'Tags', dynamic: 'tags.id.name', list: true };
const BILLABLE = { key: 'billable', label: 'Billable', type: 'boolean' };
const DESCRIPTION = { key: 'description', label: 'Description' };

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

/** Zapier gives booleans as text; empty means "not given". */
const bool = (value) => {
  if (value === undefined || value === null || value === '') {
    return undefined;
  }
  return value === true || ['true', 'yes', '1'].includes(String(value).toLowerCase());
};

/** The fields an entry takes (description, project, task, tags, billable), the empty ones left out. */
const entryFields = (input) => {
  const body = {};
  if (input.description) body.description = input.description;
  if (input.project_id) body.project_id = String(input.project_id).trim();
  if (input.task_id) body.task_id = String(input.task_id).trim();
  if (input.tag_ids) {
    const tags = (Array.isArray(input.tag_ids) ? input.tag_ids : String(input.tag_ids).split(','))
      .map((t) => String(t).trim())
      .filter(Boolean);
    if (tags.length > 0) body.tag_ids = tags;
  }
  const billable = bool(input.billable);
  if (billable !== undefined) body.billable = billable;
  return body;
};

/** A create that posts `body(inputData)` to `url` and answers the response body. */
const create = ({ key, noun, label, description, url, inputFields, body, sample }) => ({
  key,
  noun,
  display: { label, description },
  operation: {
    inputFields,
    perform: async (z, bundle) => {
      const response = await z.request({
        url,
        method: 'POST',
        body: body(bundle.inputData || {}),
      });
      return response.data;
    },
    sample,
  },
});

/** The fields given of `keys`, the empty ones left out. */
const given = (input, keys) =>
  Object.fromEntries(
    keys.filter((k) => input[k] !== undefined && input[k] !== null && input[k] !== '').map((k) => [k, input[k]]),
  );

const creates = [
  create({
    key: 'start_timer',
    noun: 'Timer',
    label: 'Start Timer',
    description: "Starts a timer for the connection's user (a running one is stopped first).",
    url: '/api/time-entries/start',
    inputFields: [DESCRIPTION, PROJECT, TASK, TAGS, BILLABLE],
    body: entryFields,
    sample: ENTRY_SAMPLE,
  }),
  create({
    key: 'stop_timer',
    noun: 'Timer',
    label: 'Stop Timer',
    description: "Stops the connection's user's running timer.",
    url: '/api/time-entries/stop',
    inputFields: [],
    body: () => ({}),
    sample: { ...ENTRY_SAMPLE, end: '2026-01-05T10:30:00Z', duration: 5400, running: false },
  }),
  create({
    key: 'create_time_entry',
    noun: 'Time Entry',
    label: 'Create Time Entry',
    description: 'Logs a finished time entry by hand.',
    url: '/api/time-entries',
    inputFields: [
      { key: 'start', label: 'Start', type: 'datetime', required: true },
      { key: 'end', label: 'End', type: 'datetime', required: true },
      DESCRIPTION,
      PROJECT,
      TASK,
      TAGS,
      BILLABLE,
    ],
    body: (input) => ({ start: input.start, end: input.end, ...entryFields(input) }),
    sample: {
      ...ENTRY_SAMPLE,
      source: 'manual',
      end: '2026-01-05T10:30:00Z',
      duration: 5400,
      running: false,
    },
  }),
  create({
    key: 'create_client',
    noun: 'Client',
    label: 'Create Client',
    description: 'Creates a client (a name the workspace already has is refused).',
    url: '/api/clients',
    inputFields: [
      { key: 'name', label: 'Name', required: true },
      { key: 'email', label: 'Email' },
      { key: 'phone', label: 'Phone' },
      { key: 'address', label: 'Address', type: 'text' },
      { key: 'note', label: 'Note', type: 'text' },
      { key: 'currency', label: 'Currency', helpText: 'ISO 4217 code, such as EUR.' },
    ],
    body: (input) => given(input, ['name', 'email', 'phone', 'address', 'note', 'currency']),
    sample: CLIENT_SAMPLE,
  }),
  create({
    key: 'create_project',
    noun: 'Project',
    label: 'Create Project',
    description: 'Creates a project, for a client or none.',
    url: '/api/projects',
    inputFields: [
      { key: 'name', label: 'Name', required: true },
      { key: 'client_id', label: 'Client', dynamic: 'clients.id.name', search: 'find_client.id' },
    ],
    body: (input) => given(input, ['name', 'client_id']),
    sample: {
      id: '0190d5a0-0000-7000-8000-000000000002',
      name: 'Website',
      client_id: null,
      created_at: '2026-01-05T09:00:00Z',
      updated_at: '2026-01-05T09:00:00Z',
    },
  }),
  create({
    key: 'create_tag',
    noun: 'Tag',
    label: 'Create Tag',
    description: 'Creates a tag.',
    url: '/api/tags',
    inputFields: [{ key: 'name', label: 'Name', required: true }],
    body: (input) => given(input, ['name']),
    sample: {
      id: '0190d5a0-0000-7000-8000-000000000004',
      name: 'urgent',
      created_at: '2026-01-05T09:00:00Z',
    },
  }),
];

module.exports = { creates };
