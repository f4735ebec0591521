'use strict';

// Searches, each paired with a create (search-or-create in index.js).

const TRIGGERS = '/api/integrations/automation/triggers';

const { CLIENT_SAMPLE, ENTRY_SAMPLE, MEMBER_SAMPLE, TAG_SAMPLE, TASK_SAMPLE } = require('./lib/samples');
const { fieldsOf } = require('./lib/fields');
const { withDecimals } = require('./lib/money');

// A find's answer with the records whose name is exactly `name` (ignoring case) first, the rest
// in the server's order: a Zap uses the first record, and "Acme X" must find "Acme X" before a
// newer "Acme X Holdings".
function exactFirst(records, name, keys = ['name']) {
  const wanted = String(name).trim().toLowerCase();
  const isExact = (r) => keys.some((k) => String(r[k] ?? '').toLowerCase() === wanted);
  return records.filter(isExact).concat(records.filter((r) => !isExact(r)));
}

/** A list's first page of up to 200 items matching `q` (the lists match names ignoring case). */
const listed = async (z, url, q) => {
  const response = await z.request({ url, params: { q, limit: 200 } });
  return (response.data && response.data.data) || [];
};

const findClient = {
  key: 'find_client',
  noun: 'Client',
  display: {
    label: 'Find Client',
    description: 'Finds clients whose name contains the text, ignoring case: an exact name first, then newest first.',
  },
  operation: {
    inputFields: [{ key: 'name', label: 'Name', required: true, helpText: 'Part of the name.' }],
    perform: async (z, bundle) => {
      // The published search names the workspace; the connection's is the key's own.
      const me = await z.request({ url: '/api/me' });
      const response = await z.request({
        url: `${TRIGGERS}/clients/find`,
        method: 'POST',
        body: { workspace_id: me.data.workspace.id, name: bundle.inputData.name },
      });
      return exactFirst(response.data, bundle.inputData.name);
    },
    sample: CLIENT_SAMPLE,
  },
};

const findProject = {
  key: 'find_project',
  noun: 'Project',
  display: {
    label: 'Find Project',
    description: 'Finds projects whose name contains the text, ignoring case; an exact name first.',
  },
  operation: {
    inputFields: [{ key: 'name', label: 'Name', required: true, helpText: 'Part of the name.' }],
    perform: async (z, bundle) => {
      const response = await z.request({
        url: `${TRIGGERS}/projects/find`,
        method: 'POST',
        body: { name: bundle.inputData.name },
      });
      return exactFirst(response.data, bundle.inputData.name);
    },
    sample: {
      id: '0190d5a0-0000-7000-8000-000000000002',
      name: 'Website',
      client: { id: '0190d5a0-0000-7000-8000-000000000001', name: 'Acme' },
      workspace: { id: '0190d5a0-0000-7000-8000-0000000000aa', name: 'Studio' },
      createdAt: '2026-01-05T09:00:00Z',
      updatedAt: '2026-01-05T09:00:00Z',
    },
  },
};

const findRunningTimer = {
  key: 'find_running_timer',
  noun: 'Timer',
  display: {
    label: 'Find Running Timer',
    description: "Finds the connection's user's running timer, if one runs.",
  },
  operation: {
    inputFields: [],
    perform: async (z) => {
      const response = await z.request({ url: `${TRIGGERS}/time-entries/running` });
      return response.data.map(withDecimals);
    },
    sample: {
      id: '0190d5a0-0000-7000-8000-000000000010',
      description: 'Design review',
      date: '2026-01-05',
      startTime: '2026-01-05T09:00:00Z',
      billable: true,
      action: 'start_timer',
      workspace: { id: '0190d5a0-0000-7000-8000-0000000000aa', name: 'Studio' },
      teamMember: { id: '0190d5a0-0000-7000-8000-0000000000bb', name: 'Ada' },
      project: null,
      task: null,
      tags: [],
      createdAt: '2026-01-05T09:00:00Z',
      updatedAt: '2026-01-05T09:00:00Z',
    },
  },
};

const findTask = {
  key: 'find_task',
  noun: 'Task',
  display: {
    label: 'Find Task',
    description: "Finds a project's tasks whose name contains the text, ignoring case; an exact name first.",
  },
  operation: {
    inputFields: [
      { key: 'project_id', label: 'Project', required: true, dynamic: 'projects.id.name', search: 'find_project.id' },
      { key: 'name', label: 'Name', required: true, helpText: 'Part of the name.' },
    ],
    perform: async (z, bundle) => {
      const project = encodeURIComponent(String(bundle.inputData.project_id).trim());
      const tasks = await listed(z, `/api/projects/${project}/tasks`, bundle.inputData.name);
      return exactFirst(tasks, bundle.inputData.name);
    },
    sample: TASK_SAMPLE,
  },
};

const findTag = {
  key: 'find_tag',
  noun: 'Tag',
  display: {
    label: 'Find Tag',
    description: 'Finds tags whose name contains the text, ignoring case; an exact name first.',
  },
  operation: {
    inputFields: [{ key: 'name', label: 'Name', required: true, helpText: 'Part of the name.' }],
    perform: async (z, bundle) => exactFirst(await listed(z, '/api/tags', bundle.inputData.name), bundle.inputData.name),
    sample: TAG_SAMPLE,
  },
};

const findMember = {
  key: 'find_member',
  noun: 'Member',
  display: {
    label: 'Find Member',
    description: 'Finds members whose name or email contains the text, ignoring case; an exact name or email first.',
  },
  operation: {
    inputFields: [{ key: 'name', label: 'Name or Email', required: true, helpText: 'Part of the name or email.' }],
    perform: async (z, bundle) =>
      exactFirst(await listed(z, '/api/members', bundle.inputData.name), bundle.inputData.name, ['name', 'email']),
    sample: MEMBER_SAMPLE,
  },
};

/** The most pages of 200 entries Find Time Entry reads. */
const MAX_ENTRY_PAGES = 5;

const findTimeEntry = {
  key: 'find_time_entry',
  noun: 'Time Entry',
  display: {
    label: 'Find Time Entry',
    description:
      'Finds time entries whose description contains the text, ignoring case, started in a period (the last 30 days unless given), optionally of a project: an exact description first, then the latest.',
  },
  operation: {
    inputFields: [
      { key: 'description', label: 'Description', required: true, helpText: 'Part of the description.' },
      { key: 'project_id', label: 'Project', dynamic: 'projects.id.name', search: 'find_project.id' },
      { key: 'from', label: 'Started From', type: 'datetime', helpText: '30 days ago when empty.' },
      { key: 'to', label: 'Started Before', type: 'datetime', helpText: 'Now when empty.' },
    ],
    perform: async (z, bundle) => {
      const input = bundle.inputData;
      const to = input.to ? new Date(input.to) : new Date();
      const from = input.from ? new Date(input.from) : new Date(to.getTime() - 30 * 24 * 3600 * 1000);
      const wanted = String(input.description).trim().toLowerCase();
      const project = input.project_id ? String(input.project_id).trim() : null;
      const found = [];
      let cursor;
      for (let page = 0; page < MAX_ENTRY_PAGES; page += 1) {
        const params = { from: from.toISOString(), to: to.toISOString(), limit: 200 };
        if (cursor) params.cursor = cursor;
        const response = await z.request({ url: '/api/time-entries', params });
        for (const entry of response.data.data || []) {
          const text = String(entry.description ?? '').toLowerCase();
          if (text.includes(wanted) && (!project || entry.project_id === project)) {
            found.push(entry);
          }
        }
        cursor = response.data.next_cursor;
        if (!cursor) break;
      }
      return exactFirst(found, input.description, ['description']).map(withDecimals);
    },
    sample: withDecimals(ENTRY_SAMPLE),
  },
};

const searches = [findClient, findProject, findRunningTimer, findTask, findTag, findMember, findTimeEntry];
// Every search names its fields, from its sample.
for (const search of searches) {
  search.operation.outputFields = fieldsOf(search.operation.sample);
}

module.exports = { searches, exactFirst };
