'use strict';

const { baseUrl } = require('./lib/http');

// A connection is the address of the user's own timetrack and one of its API keys; the test asks
// the server who the key belongs to.
module.exports = {
  type: 'custom',
  fields: [
    {
      key: 'base_url',
      label: 'Base URL',
      required: true,
      type: 'string',
      helpText:
        'The address of your timetrack, such as `https://timetrack.example.com` (what `timetrack serve` prints).',
    },
    {
      key: 'api_key',
      label: 'API Key',
      required: true,
      type: 'password',
      helpText:
        'A key made with `timetrack admin create-api-key` (it starts with `tt_`). The connection acts as its user.',
    },
  ],
  test: async (z, bundle) => {
    baseUrl(z, bundle);
    const response = await z.request({ url: '/api/me' });
    return response.data;
  },
  connectionLabel: (z, bundle) => {
    const me = bundle.inputData || {};
    const user = (me.user && (me.user.name || me.user.email)) || 'timetrack';
    const workspace = me.workspace && me.workspace.name;
    return workspace ? `${user} (${workspace})` : user;
  },
};
