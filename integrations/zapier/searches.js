'use strict';

// Searches, each paired with a create (search-or-create in index.js).

const TRIGGERS = '/api/integrations/automation/triggers';

const { CLIENT_SAMPLE } = require('./lib/samples');

// A find's answer with the records whose name is exactly `name` (ignoring case) first, the rest
// in the server's order: a Zap uses the first record, and "Acme X" must find "Acme X" before a
// newer "Acme X Holdings".
function exactFirst(records, name) {
  const wanted = String(name).toLowerCase();
  const exact = records.filter((r) => String(r.name).toLowerCase() === wanted);
  const rest = records.filter((r) => String(r.name).toLowerCase() !== wanted);
  return exact.concat(rest);
}

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
      return response.data;
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

module.exports = { searches: [findClient, findProject, findRunningTimer] };
