'use strict';

// One instant trigger (REST hook) per subscribable event type of the catalog.

const { eventTypes } = require('../lib/catalog');
const { verify } = require('../lib/signature');
const { withDecimals } = require('../lib/money');

const HOOKS = '/api/integrations/automation/webhooks';

/** The drop-down of each filter a trigger may offer. */
const FILTER_FIELDS = {
  project_ids: {
    key: 'project_ids',
    label: 'Projects',
    dynamic: 'projects.id.name',
    list: true,
    helpText: 'Only events about these projects. Leave empty for all.',
  },
  client_ids: {
    key: 'client_ids',
    label: 'Clients',
    dynamic: 'clients.id.name',
    list: true,
    helpText: 'Only events about these clients (or their projects). Leave empty for all.',
  },
  user_ids: {
    key: 'user_ids',
    label: 'Members',
    dynamic: 'members.id.name',
    list: true,
    helpText: 'Only entries of these members. Leave empty for all.',
  },
  billable: {
    key: 'billable',
    label: 'Billable',
    choices: { true: 'Billable entries only', false: 'Non-billable entries only' },
    helpText: 'Leave empty for both.',
  },
};

/** A list field's values as an array, whether Zapier gives an array or a comma-separated text. */
const ids = (value) =>
  (Array.isArray(value) ? value : String(value).split(','))
    .map((v) => String(v).trim())
    .filter(Boolean);

/** The `filters` object of a subscription from a trigger's input, or undefined when none. */
const filtersFrom = (names, inputData) => {
  const filters = {};
  for (const name of names) {
    const value = inputData[name];
    if (value === undefined || value === null || value === '') {
      continue;
    }
    if (name === 'billable') {
      filters.billable = value === true || String(value).toLowerCase() === 'true';
    } else if (ids(value).length > 0) {
      filters[name] = ids(value);
    }
  }
  return Object.keys(filters).length > 0 ? filters : undefined;
};

const triggerOf = (event) => ({
  key: event.key,
  noun: event.noun,
  display: {
    label: event.label,
    description: `Triggers at once when ${event.description.charAt(0).toLowerCase()}${event.description.slice(1)}`,
  },
  operation: {
    type: 'hook',
    inputFields: event.filters.map((name) => FILTER_FIELDS[name]),

    performSubscribe: async (z, bundle) => {
      const response = await z.request({
        url: `${HOOKS}/subscribe`,
        method: 'POST',
        body: {
          url: bundle.targetUrl,
          events: [event.type],
          description: `Zapier: ${event.label}`,
          filters: filtersFrom(event.filters, bundle.inputData || {}),
        },
      });
      return response.data;
    },

    performUnsubscribe: async (z, bundle) => {
      const id = bundle.subscribeData && bundle.subscribeData.webhook && bundle.subscribeData.webhook.id;
      if (!id) {
        throw new z.errors.Error('This Zap holds no subscription to remove', 'no_subscription', 400);
      }
      const response = await z.request({
        url: `${HOOKS}/${encodeURIComponent(id)}`,
        method: 'DELETE',
      });
      return response.data;
    },

    // A delivery: its body is the event. It is taken only when its signature by the
    // subscription's secret holds and was made within five minutes: a request timetrack did not
    // sign, a captured delivery replayed later, or one whose raw request (and so signature)
    // Zapier did not hand over, is refused.
    perform: async (z, bundle) => {
      const secret = bundle.subscribeData && bundle.subscribeData.webhook && bundle.subscribeData.webhook.secret;
      if (!secret) {
        throw new z.errors.HaltedError(
          'This trigger has no signing secret from timetrack: turn the Zap off and on again to subscribe anew',
        );
      }
      if (!bundle.rawRequest) {
        throw new z.errors.HaltedError('The delivery came without its raw request, so its signature cannot be checked');
      }
      if (!verify(secret, bundle.rawRequest)) {
        throw new z.errors.HaltedError(
          'The request was not signed by this subscription\'s timetrack in the last five minutes',
        );
      }
      return [withDecimals(bundle.cleanedRequest)];
    },

    // Recent real events of this type from the catch-up feed, newest first; the catalog's sample
    // when there are none yet.
    performList: async (z) => {
      const response = await z.request({
        url: '/api/integrations/automation/events',
        params: { before: 'latest', types: event.type, limit: 10 },
      });
      const events = (response.data && response.data.data) || [];
      return events.length > 0 ? events.map((e) => withDecimals(e.payload)) : [event.sample];
    },

    sample: event.sample,
    outputFields: event.outputFields,
  },
});

const triggers = eventTypes().map(triggerOf);

module.exports = { triggers, filtersFrom };
