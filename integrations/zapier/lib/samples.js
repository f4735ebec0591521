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

module.exports = { CLIENT_SAMPLE };
