'use strict';

// Hidden polling triggers that fill the drop-downs: clients, projects, tasks of a project, tags
// and members.

/** The most pages of 200 a drop-down reads: 1,000 items. */
const MAX_PAGES = 5;

const listTrigger = ({ key, noun, path, sample, label = (item) => item.name }) => ({
  key,
  noun,
  display: {
    label: `List ${noun}s`,
    description: `Fills drop-downs with the workspace's ${noun.toLowerCase()}s.`,
    hidden: true,
  },
  operation: {
    type: 'polling',
    // Up to MAX_PAGES pages of 200 in one call, following the list's cursor: drop-downs rarely
    // hold more, and Zapier's own paging would need its cursor store (z.cursor), which only
    // runs on Zapier.
    perform: async (z, bundle) => {
      const url = path(bundle);
      if (!url) {
        return [];
      }
      const items = [];
      let cursor;
      for (let page = 0; page < MAX_PAGES; page += 1) {
        const response = await z.request({
          url,
          params: cursor ? { limit: 200, cursor } : { limit: 200 },
        });
        const body = response.data || {};
        items.push(...(body.data || []));
        cursor = body.next_cursor;
        if (!cursor) {
          break;
        }
      }
      return items.map((item) => ({ ...item, name: label(item) }));
    },
    sample,
  },
});

const triggers = [
  listTrigger({
    key: 'clients',
    noun: 'Client',
    path: () => '/api/clients',
    sample: { id: '0190d5a0-0000-7000-8000-000000000001', name: 'Acme' },
  }),
  listTrigger({
    key: 'projects',
    noun: 'Project',
    path: () => '/api/projects',
    sample: { id: '0190d5a0-0000-7000-8000-000000000002', name: 'Website' },
  }),
  listTrigger({
    key: 'tasks',
    noun: 'Task',
    // The tasks of the project chosen in the same step; none before one is chosen.
    path: (bundle) => {
      const project = bundle.inputData && bundle.inputData.project_id;
      return project ? `/api/projects/${encodeURIComponent(String(project).trim())}/tasks` : null;
    },
    sample: { id: '0190d5a0-0000-7000-8000-000000000003', name: 'Design' },
  }),
  listTrigger({
    key: 'tags',
    noun: 'Tag',
    path: () => '/api/tags',
    sample: { id: '0190d5a0-0000-7000-8000-000000000004', name: 'urgent' },
  }),
  listTrigger({
    key: 'members',
    noun: 'Member',
    path: () => '/api/members',
    sample: { id: '0190d5a0-0000-7000-8000-000000000005', name: 'Ada (ada@example.com)' },
    label: (member) => `${member.name} (${member.email})`,
  }),
];

module.exports = { triggers };
