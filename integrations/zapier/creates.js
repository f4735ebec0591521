'use strict';

// Creates: each answers the object timetrack made.

const { CLIENT_SAMPLE, ENTRY_SAMPLE: ENTRY, TAG_SAMPLE, TASK_SAMPLE } = require('./lib/samples');
const { fieldsOf } = require('./lib/fields');
const { withDecimals } = require('./lib/money');

const ENTRY_SAMPLE = withDecimals(ENTRY);

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

/**
 * A create that sends `body(inputData)` to `url` (a path, or a function of the input giving one)
 * with `method` (POST unless given) and answers the response body, with decimal amounts beside
 * minor units; its output fields come from its sample.
 */
const create = ({ key, noun, label, description, url, method = 'POST', inputFields, body, sample }) => ({
  key,
  noun,
  display: { label, description },
  operation: {
    inputFields,
    perform: async (z, bundle) => {
      const input = bundle.inputData || {};
      const response = await z.request({
        url: typeof url === 'function' ? url(input) : url,
        method,
        body: body(input),
      });
      return withDecimals(response.data);
    },
    sample,
    outputFields: fieldsOf(sample),
  },
});

/** A path segment of an id from the input. */
const segment = (value) => encodeURIComponent(String(value ?? '').trim());

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
    key: 'update_time_entry',
    noun: 'Time Entry',
    label: 'Update Time Entry',
    description:
      "Changes one of the connection's user's time entries (a running one too): the fields given change, the empty ones stay.",
    url: (input) => `/api/time-entries/${segment(input.id)}`,
    method: 'PATCH',
    inputFields: [
      { key: 'id', label: 'Time Entry', required: true, search: 'find_time_entry.id', helpText: 'The entry\'s ID.' },
      { key: 'start', label: 'Start', type: 'datetime' },
      { key: 'end', label: 'End', type: 'datetime', helpText: 'A stopped entry\'s.' },
      DESCRIPTION,
      PROJECT,
      TASK,
      TAGS,
      BILLABLE,
    ],
    body: (input) => ({ ...given(input, ['start', 'end']), ...entryFields(input) }),
    sample: { ...ENTRY_SAMPLE, end: '2026-01-05T10:30:00Z', duration: 5400, running: false },
  }),
  create({
    key: 'create_task',
    noun: 'Task',
    label: 'Create Task',
    description: 'Creates a task of a project.',
    url: (input) => `/api/projects/${segment(input.project_id)}/tasks`,
    inputFields: [
      { key: 'project_id', label: 'Project', required: true, dynamic: 'projects.id.name', search: 'find_project.id' },
      { key: 'name', label: 'Name', required: true },
    ],
    body: (input) => given(input, ['name']),
    sample: TASK_SAMPLE,
  }),
  create({
    key: 'create_tag',
    noun: 'Tag',
    label: 'Create Tag',
    description: 'Creates a tag.',
    url: '/api/tags',
    inputFields: [{ key: 'name', label: 'Name', required: true }],
    body: (input) => given(input, ['name']),
    sample: TAG_SAMPLE,
  }),
];

module.exports = { creates };
