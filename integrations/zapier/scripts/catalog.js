'use strict';

// Writes catalog.json from a running timetrack's event catalog: every subscribable type with its
// description, schema and sample. Run after the server gains an event type:
//   TIMETRACK_API_KEY=tt_... npm run catalog -- http://127.0.0.1:8080

const fs = require('fs');
const path = require('path');

const main = async () => {
  const base = (process.argv[2] || '').replace(/\/+$/, '');
  const key = process.env.TIMETRACK_API_KEY;
  if (!base || !key) {
    console.error('usage: TIMETRACK_API_KEY=tt_... npm run catalog -- <base URL>');
    process.exit(2);
  }
  const res = await fetch(`${base}/api/integrations/automation/event-types`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  const body = await res.json();
  if (res.status !== 200) {
    console.error(`${res.status}: ${body.error}`);
    process.exit(1);
  }
  const catalog = body
    .filter((t) => t.subscribable)
    .map(({ type, description, schema, sample }) => ({ type, description, schema, sample }));
  const file = path.join(__dirname, '..', 'catalog.json');
  fs.writeFileSync(file, `${JSON.stringify(catalog, null, 2)}\n`);
  console.log(`${file}: ${catalog.length} event types`);
};

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
