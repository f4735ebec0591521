'use strict';

// The timetrack app for Zapier: a connection to a user's own timetrack (base URL and API key),
// an instant trigger per event type of the catalog, searches with search-or-create, creates, and
// the hidden triggers behind the drop-downs.

const authentication = require('./authentication');
const { addBaseUrlAndKey, raiseErrors } = require('./lib/http');
const { triggers: eventTriggers } = require('./triggers/events');
const { triggers: listTriggers } = require('./triggers/lists');
const { searches } = require('./searches');
const { creates } = require('./creates');

const byKey = (items) => Object.fromEntries(items.map((item) => [item.key, item]));

module.exports = {
  version: require('./package.json').version,
  platformVersion: require('zapier-platform-core').version,

  authentication,
  beforeRequest: [addBaseUrlAndKey],
  afterResponse: [raiseErrors],

  triggers: byKey([...eventTriggers, ...listTriggers]),
  searches: byKey(searches),
  creates: byKey(creates),

  searchOrCreates: {
    find_client: {
      key: 'find_client',
      display: {
        label: 'Find or Create Client',
        description: 'Finds a client by name, or creates it.',
      },
      search: 'find_client',
      create: 'create_client',
    },
    find_project: {
      key: 'find_project',
      display: {
        label: 'Find or Create Project',
        description: 'Finds a project by name, or creates it.',
      },
      search: 'find_project',
      create: 'create_project',
    },
    find_task: {
      key: 'find_task',
      display: {
        label: 'Find or Create Task',
        description: "Finds a project's task by name, or creates it.",
      },
      search: 'find_task',
      create: 'create_task',
    },
    find_tag: {
      key: 'find_tag',
      display: {
        label: 'Find or Create Tag',
        description: 'Finds a tag by name, or creates it.',
      },
      search: 'find_tag',
      create: 'create_tag',
    },
    find_running_timer: {
      key: 'find_running_timer',
      display: {
        label: 'Find Running Timer or Start One',
        description: "Finds the user's running timer, or starts one.",
      },
      search: 'find_running_timer',
      create: 'start_timer',
    },
  },
};
