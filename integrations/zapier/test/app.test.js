'use strict';

// The app against the real timetrack: every trigger subscribed, fed one real delivery, listed and
// unsubscribed; every search and create; the drop-downs; the errors. Zapier's own test tools
// (`createAppTester`) run each operation as Zapier would.

const { describe, before, after, test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('crypto');
const path = require('path');
const { isDeepStrictEqual } = require('util');
const zapier = require('zapier-platform-core');

const App = require('../index');
const { eventTypes, filtersOf } = require('../lib/catalog');
const { problems } = require('../scripts/validate');
const { decimalKey, withDecimals } = require('../lib/money');
const { makeCertificates, startReceiver, startServer, tempDir } = require('./harness');

const appTester = zapier.createAppTester(App);
const HOOKS = '/api/integrations/automation/webhooks';

/** The message, code and status an app error carries (Zapier serializes them as JSON). */
const appError = (err) => {
  try {
    return JSON.parse(err.message);
  } catch {
    return { message: err.message };
  }
};

describe('the timetrack Zapier app', () => {
  let dir;
  let certs;
  let receiver;
  let server;
  let dataDir;
  const serverEnv = () => ({
    TIMETRACK_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    TIMETRACK_WEBHOOK_ROOT_CERTS: certs.ca,
    // Long enough (20 s of retries) for the failing notice to arrive before the flaky hook gives up.
    TIMETRACK_WEBHOOK_RETRY_SCHEDULE: Array(40).fill('500ms').join(','),
    TIMETRACK_WEBHOOK_TIMEOUT: '3',
    TIMETRACK_WEBHOOK_FAILING_AFTER: '1s',
    TIMETRACK_WEBHOOK_DISABLE_AFTER: '1h',
    TIMETRACK_RATE_LIMIT_PER_MINUTE: '1000000',
    TIMETRACK_RATE_LIMIT_PER_SECOND: '1000000',
  });
  const auth = () => ({ base_url: server.base, api_key: server.key });
  const bundle = (extra = {}) => ({ authData: auth(), inputData: {}, ...extra });

  /** A REST call made directly (to set the scene), answering status and body. */
  const api = async (method, url, body) => {
    const res = await fetch(server.base + url, {
      method,
      headers: { Authorization: `Bearer ${server.key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  before(async () => {
    dir = tempDir();
    dataDir = path.join(dir, 'data');
    certs = makeCertificates(dir);
    receiver = await startReceiver(certs);
    server = await startServer(dataDir, serverEnv());
  });

  after(async () => {
    if (server) await server.stop();
    if (receiver) await receiver.close();
  });

  test('the definition validates against zapier-platform-schema', async () => {
    const { definition, errors } = await problems();
    assert.deepEqual(errors, []);
    assert.equal(definition.authentication.type, 'custom');
  });

  test("catalog.json is the server's catalog: one trigger per subscribable event type", async () => {
    const live = await api('GET', '/api/integrations/automation/event-types');
    assert.equal(live.status, 200);
    const subscribable = live.body
      .filter((t) => t.subscribable)
      .map(({ type, description, schema, sample }) => ({ type, description, schema, sample }));
    assert.deepEqual(
      require('../catalog.json'),
      subscribable,
      'catalog.json differs from the server: run `npm run catalog -- <base URL>` with TIMETRACK_API_KEY set',
    );
    const hooks = Object.values(App.triggers).filter((t) => t.operation.type === 'hook');
    assert.deepEqual(
      hooks.map((t) => t.key).sort(),
      subscribable.map((t) => t.type.toLowerCase()).sort(),
    );
    for (const trigger of hooks) {
      const entry = subscribable.find((t) => t.type.toLowerCase() === trigger.key);
      // The catalog's sample, with the decimal amounts beside minor units (lib/money.js).
      assert.deepEqual(trigger.operation.sample, withDecimals(entry.sample));
      const top = new Set(trigger.operation.outputFields.map((f) => f.key.split(/__|\[\]/)[0]));
      const twins = Object.keys(entry.schema.properties)
        .filter((k) => entry.schema.properties.currency && decimalKey(k))
        .map(decimalKey);
      assert.deepEqual([...top].sort(), [...Object.keys(entry.schema.properties), ...twins].sort(), trigger.key);
    }
  });

  test('the connection test answers the user and workspace, and labels the connection', async () => {
    const me = await appTester(App.authentication.test, bundle());
    assert.equal(me.user.name, 'Demo User');
    assert.equal(me.workspace.name, 'Demo workspace');
    const label = App.authentication.connectionLabel({}, { inputData: me });
    assert.equal(label, 'Demo User (Demo workspace)');
  });

  test('a wrong key or base URL is a clear error', async () => {
    const refused = await api('GET', '/api/me').then(() =>
      fetch(`${server.base}/api/me`, { headers: { Authorization: 'Bearer tt_wrong' } }).then((r) => r.json()),
    );
    await assert.rejects(
      appTester(App.authentication.test, { authData: { base_url: server.base, api_key: 'tt_wrong' } }),
      (err) => {
        const e = appError(err);
        assert.equal(e.message, refused.error);
        assert.equal(e.status, 401);
        return true;
      },
    );
    await assert.rejects(
      appTester(App.authentication.test, { authData: { base_url: 'timetrack.example', api_key: 'k' } }),
      (err) => /Base URL must be the address of your timetrack/.test(appError(err).message),
    );
  });

  // The scene the triggers, searches and creates work on.
  const scene = {};

  test('creates answer the created objects', async () => {
    scene.client = await appTester(App.creates.create_client.operation.perform,
      bundle({ inputData: { name: 'Acme Studio', email: 'billing@acme.example' } }));
    assert.equal(scene.client.name, 'Acme Studio');
    assert.equal(scene.client.email, 'billing@acme.example');
    scene.project = await appTester(App.creates.create_project.operation.perform,
      bundle({ inputData: { name: 'Website', client_id: scene.client.id } }));
    assert.equal(scene.project.name, 'Website');
    assert.equal(scene.project.client_id, scene.client.id);
    scene.tag = await appTester(App.creates.create_tag.operation.perform,
      bundle({ inputData: { name: 'urgent' } }));
    assert.equal(scene.tag.name, 'urgent');
    const task = await api('POST', `/api/projects/${scene.project.id}/tasks`, { name: 'Design' });
    assert.equal(task.status, 201);
    scene.task = task.body;
    for (const [key, made] of [
      ['create_client', scene.client],
      ['create_project', scene.project],
      ['create_tag', scene.tag],
    ]) {
      assert.deepEqual(Object.keys(App.creates[key].operation.sample).sort(), Object.keys(made).sort(), key);
    }
  });

  test('each trigger offers exactly the filters the server accepts for its type', async () => {
    const me = (await api('GET', '/api/me')).body;
    const values = {
      project_ids: [scene.project.id],
      client_ids: [scene.client.id],
      user_ids: [me.user.id],
      billable: true,
    };
    for (const event of eventTypes()) {
      const offered = App.triggers[event.key].operation.inputFields.map((f) => f.key);
      assert.deepEqual(offered, filtersOf(event.type), event.type);
      for (const [name, value] of Object.entries(values)) {
        const res = await api('POST', `${HOOKS}/subscribe`, {
          url: receiver.url('/filters'),
          events: [event.type],
          filters: { [name]: value },
        });
        assert.equal(res.status === 201, offered.includes(name), `${event.type} with ${name}: ${JSON.stringify(res.body)}`);
        if (res.status === 201) {
          assert.equal((await api('DELETE', `${HOOKS}/${res.body.webhook.id}`)).status, 200);
        }
      }
    }
  });

  // Every trigger subscribed through the app, each to a hook URL of its own.
  const subscriptions = {};

  test('every trigger subscribes with its one event type (and its filters)', async () => {
    for (const event of eventTypes()) {
      const inputData = event.type.startsWith('TIMER_') ? { project_ids: [scene.project.id], billable: 'true' } : {};
      const data = await appTester(App.triggers[event.key].operation.performSubscribe,
        bundle({ targetUrl: receiver.url(`/hook/${event.key}`), inputData }));
      assert.equal(data.success, true);
      assert.deepEqual(data.webhook.events, [event.type]);
      assert.match(data.webhook.secret, /^whsec_/);
      subscriptions[event.key] = data;
      const stored = await api('GET', `${HOOKS}/${data.webhook.id}`);
      assert.equal(stored.status, 200);
      if (event.type.startsWith('TIMER_')) {
        assert.deepEqual(stored.body.webhook.filters, { project_ids: [scene.project.id], billable: true });
      }
    }
  });

  test('searches find clients, projects and the running timer; start and stop timer work', async () => {
    const clients = await appTester(App.searches.find_client.operation.perform,
      bundle({ inputData: { name: 'acme' } }));
    assert.deepEqual(clients.map((c) => c.id), [scene.client.id]);
    assert.deepEqual(Object.keys(App.searches.find_client.operation.sample).sort(), Object.keys(clients[0]).sort());
    const projects = await appTester(App.searches.find_project.operation.perform,
      bundle({ inputData: { name: 'WEB' } }));
    assert.deepEqual(projects.map((p) => p.id), [scene.project.id]);
    assert.deepEqual(Object.keys(App.searches.find_project.operation.sample).sort(), Object.keys(projects[0]).sort());
    assert.deepEqual(await appTester(App.searches.find_running_timer.operation.perform, bundle()), []);

    scene.timer = await appTester(App.creates.start_timer.operation.perform, bundle({
      inputData: {
        description: 'Design review',
        project_id: scene.project.id,
        task_id: scene.task.id,
        tag_ids: [scene.tag.id],
        billable: 'true',
      },
    }));
    assert.equal(scene.timer.description, 'Design review');
    assert.deepEqual(Object.keys(App.creates.start_timer.operation.sample).sort(), Object.keys(scene.timer).sort());
    const running = await appTester(App.searches.find_running_timer.operation.perform, bundle());
    assert.deepEqual(running.map((e) => e.id), [scene.timer.id]);
    assert.deepEqual(Object.keys(App.searches.find_running_timer.operation.sample).sort(), Object.keys(running[0]).sort());
    const stopped = await appTester(App.creates.stop_timer.operation.perform, bundle());
    assert.equal(stopped.id, scene.timer.id);
    assert.ok(stopped.end);
    assert.deepEqual(Object.keys(App.creates.stop_timer.operation.sample).sort(), Object.keys(stopped).sort());
    scene.manual = await appTester(App.creates.create_time_entry.operation.perform, bundle({
      inputData: {
        start: '2026-03-02T09:00:00Z',
        end: '2026-03-02T10:30:00Z',
        description: 'Call',
        project_id: scene.project.id,
      },
    }));
    assert.equal(scene.manual.duration, 5400);
    assert.equal(scene.manual.source, 'manual');
    assert.deepEqual(Object.keys(App.creates.create_time_entry.operation.sample).sort(), Object.keys(scene.manual).sort());
  });

  test('the hidden triggers fill the drop-downs', async () => {
    const list = (key, inputData = {}) => appTester(App.triggers[key].operation.perform,
      bundle({ inputData, meta: { page: 0 } }));
    assert.deepEqual((await list('clients')).map((c) => c.name), ['Acme Studio']);
    assert.deepEqual((await list('projects')).map((p) => p.id), [scene.project.id]);
    assert.deepEqual((await list('tasks', { project_id: scene.project.id })).map((t) => t.name), ['Design']);
    assert.deepEqual(await list('tasks'), []);
    assert.deepEqual((await list('tags')).map((t) => t.id), [scene.tag.id]);
    assert.deepEqual((await list('members')).map((m) => m.name), ['Demo User (demo@example.com)']);
  });

  test('finds for tasks, tags, members and time entries; update a time entry; create a task', async () => {
    const search = (key, inputData) => appTester(App.searches[key].operation.perform, bundle({ inputData }));
    const create = (key, inputData) => appTester(App.creates[key].operation.perform, bundle({ inputData }));
    const sameKeys = (sample, made, what) =>
      assert.deepEqual(Object.keys(sample).sort(), Object.keys(made).sort(), what);

    const other = await create('create_task', { project_id: scene.project.id, name: 'Design system' });
    assert.equal(other.project_id, scene.project.id);
    sameKeys(App.creates.create_task.operation.sample, other, 'create_task');
    const tasks = await search('find_task', { project_id: scene.project.id, name: 'DESIGN' });
    assert.deepEqual(tasks.map((t) => t.id), [scene.task.id, other.id], 'the exact name first');
    sameKeys(App.searches.find_task.operation.sample, tasks[0], 'find_task');

    const tags = await search('find_tag', { name: 'URGENT' });
    assert.deepEqual(tags.map((t) => t.id), [scene.tag.id]);
    sameKeys(App.searches.find_tag.operation.sample, tags[0], 'find_tag');

    const members = await search('find_member', { name: 'DEMO@example.com' });
    assert.equal(members.length, 1);
    assert.equal(members[0].email, 'demo@example.com');
    sameKeys(App.searches.find_member.operation.sample, members[0], 'find_member');
    assert.deepEqual(await search('find_member', { name: 'nobody-here' }), []);

    const entries = await search('find_time_entry', {
      description: 'CALL',
      from: '2026-03-01T00:00:00Z',
      to: '2026-03-03T00:00:00Z',
    });
    assert.deepEqual(entries.map((e) => e.id), [scene.manual.id]);
    sameKeys(App.searches.find_time_entry.operation.sample, entries[0], 'find_time_entry');
    assert.deepEqual(await search('find_time_entry', {
      description: 'call',
      from: '2026-03-01T00:00:00Z',
      to: '2026-03-03T00:00:00Z',
      project_id: '0190d5a0-0000-7000-8000-00000000dead',
    }), []);

    const changed = await create('update_time_entry', {
      id: scene.manual.id,
      description: 'Call about the website',
      end: '2026-03-02T11:00:00Z',
      billable: 'false',
    });
    assert.equal(changed.id, scene.manual.id);
    assert.equal(changed.description, 'Call about the website');
    assert.equal(changed.duration, 7200);
    assert.equal(changed.billable, false);
    assert.equal(changed.project_id, scene.project.id, 'an empty field stays');
    sameKeys(App.creates.update_time_entry.operation.sample, changed, 'update_time_entry');
    assert.ok(App.searchOrCreates.find_task && App.searchOrCreates.find_tag);
  });

  test("labels follow Zapier's conventions and every search and create names its output fields", async () => {
    assert.equal(App.triggers.client_created.display.label, 'New Client');
    assert.equal(App.triggers.time_entry_created.display.label, 'New Time Entry');
    assert.equal(App.triggers.project_updated.display.label, 'Updated Project');
    assert.equal(App.triggers.client_deleted.display.label, 'Deleted Client');
    assert.equal(App.triggers.timer_stopped.display.label, 'Timer Stopped');
    assert.equal(App.triggers.invoice_paid.display.label, 'Invoice Paid');
    const label = (fields, key) => (fields.find((f) => f.key === key) || {}).label;
    assert.equal(label(App.triggers.client_created.operation.outputFields, 'id'), 'ID');
    for (const [kind, items] of [['searches', App.searches], ['creates', App.creates]]) {
      for (const [key, item] of Object.entries(items)) {
        const fields = item.operation.outputFields;
        assert.ok(Array.isArray(fields) && fields.length > 0, `${kind}.${key} has output fields`);
        assert.equal(label(fields, 'id'), 'ID', `${kind}.${key}`);
      }
    }
    assert.equal(label(App.creates.create_project.operation.outputFields, 'client_id'), 'Client ID');
  });

  test('money comes also as a decimal amount in its currency', async () => {
    const { decimal, withDecimals } = require('../lib/money');
    assert.equal(decimal(21420, 'USD'), '214.20');
    assert.equal(decimal(5, 'EUR'), '0.05');
    assert.equal(decimal(-1999, 'GBP'), '-19.99');
    assert.equal(decimal(1500, 'JPY'), '1500');
    assert.equal(decimal(1234, 'KWD'), '1.234');
    assert.equal(decimal(Number.MAX_SAFE_INTEGER, 'USD'), '90071992547409.91');
    assert.deepEqual(
      withDecimals({ currency: 'USD', totalMinor: 21420, paidMinor: 0, nested: { currency: 'JPY', rate_minor: 7 } }),
      { currency: 'USD', totalMinor: 21420, total: '214.20', paidMinor: 0, paid: '0.00', nested: { currency: 'JPY', rate_minor: 7, rate: '7' } },
    );
    // A real entry's pricing, and an invoice trigger's fields and sample.
    const pricing = scene.manual.pricing;
    assert.equal(pricing.billable_amount, decimal(pricing.billable_amount_minor, pricing.currency));
    const invoice = App.triggers.invoice_paid.operation;
    assert.ok(invoice.outputFields.some((f) => f.key === 'total' && f.label === 'Total'));
    assert.equal(invoice.sample.total, decimal(invoice.sample.totalMinor, invoice.sample.currency));
  });

  test('the rest of the events happen: edits, deletes, invoices, a failing webhook', async () => {
    const ok = async (method, url, body, status = 200) => {
      const res = await api(method, url, body);
      assert.equal(res.status, status, `${method} ${url}: ${JSON.stringify(res.body)}`);
      return res.body;
    };
    await ok('PATCH', `/api/clients/${scene.client.id}`, { email: 'accounts@acme.example' });
    await ok('PATCH', `/api/projects/${scene.project.id}`, { name: 'Website 2' });
    await ok('PATCH', `/api/time-entries/${scene.manual.id}`, { description: 'Call with Acme' });
    await ok('DELETE', `/api/time-entries/${scene.manual.id}`, undefined, 204).catch(async () => {});
    const temp = await ok('POST', '/api/projects', { name: 'Temporary' }, 201);
    scene.temp = temp;
    await ok('DELETE', `/api/projects/${temp.id}`, undefined, 204).catch(async () => {});
    const gone = await ok('POST', '/api/clients', { name: 'Gone' }, 201);
    scene.gone = gone;
    await ok('DELETE', `/api/clients/${gone.id}`, undefined, 204).catch(async () => {});

    const invoice = async () => ok('POST', '/api/invoices', {
      client_id: scene.client.id,
      from: '2026-01-01',
      to: '2026-01-31',
      extra_lines: [{ description: 'Setup', quantity: '1', unit_price_minor: 5000 }],
    }, 201);
    const overdue = await invoice();
    scene.overdue = overdue;
    await ok('PATCH', `/api/invoices/${overdue.id}`, { issue_date: '2026-01-31', due_date: '2026-02-28' });
    await ok('POST', `/api/invoices/${overdue.id}/issue`);
    const paid = await invoice();
    scene.paid = paid;
    await ok('POST', `/api/invoices/${paid.id}/issue`);
    await ok('POST', `/api/invoices/${paid.id}/payments`, { amount_minor: 5000, paid_on: '2026-02-01' }, 201);
    const voided = await invoice();
    scene.voided = voided;
    await ok('POST', `/api/invoices/${voided.id}/issue`);
    await ok('POST', `/api/invoices/${voided.id}/void`, { reason: 'Sent twice' });

    // Webhooks of the same owner: one fails for a while then succeeds again, one answers 410.
    receiver.respond('/flaky', 500);
    receiver.respond('/gone', 410);
    const flaky = await ok('POST', `${HOOKS}/subscribe`, { url: receiver.url('/flaky'), events: ['CLIENT_CREATED'] }, 201);
    const gone410 = await ok('POST', `${HOOKS}/subscribe`, { url: receiver.url('/gone'), events: ['CLIENT_CREATED'] }, 201);
    scene.flaky = flaky.webhook.id;
    scene.gone410 = gone410.webhook.id;
    await ok('POST', '/api/clients', { name: 'Bumpy' }, 201);
    await receiver.waitFor('/hook/webhook_failing', 1, 60);
    receiver.respond('/flaky', 200);
    await receiver.waitFor('/hook/webhook_recovered', 1, 60);
    await receiver.waitFor('/hook/webhook_disabled', 1, 60);
  });

  test('the overdue invoice is announced by the next housekeeping pass (at start)', async () => {
    await server.stop();
    server = await startServer(dataDir, serverEnv());
    await receiver.waitFor('/hook/invoice_overdue', 1, 60);
  });

  // What each delivered payload must be about.
  const subjectOf = (type) => ({
    TIMER_STARTED: scene.timer.id,
    TIMER_STOPPED: scene.timer.id,
    TIME_ENTRY_CREATED: scene.manual.id,
    TIME_ENTRY_UPDATED: scene.manual.id,
    TIME_ENTRY_DELETED: scene.manual.id,
    // The first client and project made after the triggers subscribed.
    CLIENT_CREATED: scene.gone.id,
    CLIENT_UPDATED: scene.client.id,
    CLIENT_DELETED: scene.gone.id,
    PROJECT_CREATED: scene.temp.id,
    PROJECT_DELETED: scene.temp.id,
    PROJECT_UPDATED: scene.project.id,
    INVOICE_CREATED: scene.overdue.id,
    INVOICE_ISSUED: scene.overdue.id,
    INVOICE_PAID: scene.paid.id,
    INVOICE_VOIDED: scene.voided.id,
    INVOICE_OVERDUE: scene.overdue.id,
  })[type];

  test('every trigger gets one real delivery: perform answers it, performList lists it, unsubscribe ends it', async () => {
    let replayChecked = false;
    for (const event of eventTypes()) {
      const [delivery] = await receiver.waitFor(`/hook/${event.key}`, 1, 60);
      assert.equal(delivery.headers['x-webhook-event'], event.type);
      const delivered = JSON.parse(delivery.body);
      // What the Zap gets: the event, with the decimal amounts beside minor units.
      const payload = withDecimals(delivered);
      const subject = subjectOf(event.type);
      if (subject) {
        assert.equal(payload.id, subject, event.type);
      } else {
        assert.match(event.type, /^WEBHOOK_/);
        assert.equal(payload.event, event.type);
        const about = event.type === 'WEBHOOK_DISABLED' ? scene.gone410 : scene.flaky;
        assert.equal(payload.webhook.id, about);
      }
      const trigger = App.triggers[event.key].operation;
      const hookBundle = (content) => bundle({
        subscribeData: subscriptions[event.key],
        cleanedRequest: JSON.parse(content),
        // Zapier hands the headers over with an `Http-` prefix.
        rawRequest: {
          headers: Object.fromEntries(
            ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [
              `Http-${h.replace(/(^|-)\w/g, (c) => c.toUpperCase())}`,
              delivery.headers[h],
            ]),
          ),
          content,
        },
      });
      assert.deepEqual(await appTester(trigger.perform, hookBundle(delivery.body)), [payload]);
      // The same headers on another body: not signed by timetrack, refused.
      const forged = JSON.stringify({ ...delivered, id: 'forged' });
      await assert.rejects(appTester(trigger.perform, hookBundle(forged)), /not signed/);
      if (!replayChecked) {
        replayChecked = true;
        // Signed by the secret but six minutes ago (a captured delivery replayed): refused;
        // the same at one minute ago: taken.
        const signedAt = (secondsAgo) => {
          const timestamp = String(Math.floor(Date.now() / 1000) - secondsAgo);
          const key = Buffer.from(subscriptions[event.key].webhook.secret.replace(/^whsec_/, ''), 'base64');
          const id = delivery.headers['webhook-id'];
          const mac = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${delivery.body}`).digest('base64');
          const b = hookBundle(delivery.body);
          b.rawRequest.headers = { 'Webhook-Id': id, 'Webhook-Timestamp': timestamp, 'Webhook-Signature': `v1,${mac}` };
          return b;
        };
        await assert.rejects(appTester(trigger.perform, signedAt(6 * 60)), /last five minutes/);
        assert.deepEqual(await appTester(trigger.perform, signedAt(60)), [payload]);
        // Without the raw request, or without the subscription's secret: nothing to check, refused.
        const bare = hookBundle(delivery.body);
        delete bare.rawRequest;
        await assert.rejects(appTester(trigger.perform, bare), /without its raw request/);
        await assert.rejects(
          appTester(trigger.perform, { ...hookBundle(delivery.body), subscribeData: {} }),
          /no signing secret/,
        );
      }

      const listed = await appTester(trigger.performList, bundle());
      assert.ok(listed.length >= 1, event.type);
      assert.ok(
        listed.some((p) => isDeepStrictEqual(p, payload)),
        `${event.type}: the delivered event is among the recent ones`,
      );

      const gone = await appTester(trigger.performUnsubscribe,
        bundle({ subscribeData: subscriptions[event.key] }));
      assert.equal(gone.success, true);
      const after = await api('GET', `${HOOKS}/${subscriptions[event.key].webhook.id}`);
      assert.equal(after.status, 404, event.type);
    }
  });

  test("performList falls back to the catalog's sample when the feed has no event of the type", async () => {
    // A second workspace's key sees none of the first one's events.
    const fresh = tempDir();
    const other = await startServer(path.join(fresh, 'data'), serverEnv());
    try {
      const listed = await appTester(App.triggers.invoice_paid.operation.performList,
        { authData: { base_url: other.base, api_key: other.key }, inputData: {} });
      assert.deepEqual(listed, [App.triggers.invoice_paid.operation.sample]);
    } finally {
      await other.stop();
    }
  });

  test('Find Client takes the exact name first, before a newer partial match', async () => {
    for (const name of ['Nordwind X', 'Nordwind X Holdings']) {
      const made = await api('POST', '/api/clients', { name });
      assert.equal(made.status, 201);
    }
    const find = (name) => appTester(App.searches.find_client.operation.perform, bundle({ inputData: { name } }));
    assert.deepEqual((await find('nordwind x')).map((c) => c.name), ['Nordwind X', 'Nordwind X Holdings']);
    assert.deepEqual((await find('NORDWIND X HOLDINGS')).map((c) => c.name), ['Nordwind X Holdings']);
    // No exact match: the server's order, newest first.
    assert.deepEqual((await find('nordwind')).map((c) => c.name), ['Nordwind X Holdings', 'Nordwind X']);
  });

  test("a 4xx reaches the Zap as timetrack's own message", async () => {
    const duplicate = await api('POST', '/api/clients', { name: 'ACME studio' });
    assert.equal(duplicate.status, 409);
    await assert.rejects(
      appTester(App.creates.create_client.operation.perform, bundle({ inputData: { name: 'ACME studio' } })),
      (err) => {
        assert.deepEqual(appError(err), { message: duplicate.body.error, code: 'http_409', status: 409 });
        return true;
      },
    );
    await assert.rejects(
      appTester(App.creates.stop_timer.operation.perform, bundle()),
      (err) => appError(err).message === 'No running timer',
    );
  });

  test("a 429 is Zapier's throttled error with the server's Retry-After", async () => {
    // Failed authentication is limited per address (30 a minute): wrong keys end in 429.
    const wrong = { authData: { base_url: server.base, api_key: 'tt_not_a_key' } };
    let throttled;
    for (let i = 0; i < 40 && !throttled; i += 1) {
      await appTester(App.authentication.test, wrong).catch((err) => {
        if (err.name === 'ThrottledError') throttled = err;
      });
    }
    assert.ok(throttled, 'no 429 after 40 wrong keys');
    const { message, delay } = JSON.parse(throttled.message);
    assert.equal(message, 'Too many requests');
    assert.ok(delay >= 1 && delay <= 60, `delay ${delay}`);
  });
});
