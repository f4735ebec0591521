'use strict';

// The event catalog of the server (`GET /api/integrations/automation/event-types`), kept in
// `catalog.json` by `npm run catalog`, turned into what a trigger needs: its key and label, the
// filters its type accepts, its output fields and its sample. The app's tests compare
// `catalog.json` with the catalog of the server they run against, so a new event type cannot be
// left out.

const catalog = require('../catalog.json');
const { humanize } = require('./fields');
const { decimalKey, withDecimals } = require('./money');

/** `TIME_ENTRY_CREATED` -> `time_entry_created`. */
const triggerKey = (type) => type.toLowerCase();

/** The words of an upper-case name: `TIME_ENTRY_CREATED` -> `Time Entry Created`. */
const words = (name) =>
  name
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');

/** What a type is about: `Time Entry` for `TIME_ENTRY_CREATED`, `Timer` for `TIMER_STARTED`. */
const noun = (type) => words(type.split('_').slice(0, -1).join('_'));

/**
 * A trigger's label in Zapier's conventions: `New Client` for `CLIENT_CREATED`, `Updated Project`
 * and `Deleted Time Entry` for changes and deletions, the event's words otherwise (`Timer
 * Stopped`, `Invoice Paid`).
 */
const labelOf = (type) => {
  const what = noun(type);
  if (type.endsWith('_CREATED')) return `New ${what}`;
  if (type.endsWith('_UPDATED')) return `Updated ${what}`;
  if (type.endsWith('_DELETED')) return `Deleted ${what}`;
  return words(type);
};

/**
 * The subscription filters an event type accepts, as the server decides it (events.md, section
 * 3): time-entry events match on project, client, member and billable; project events on project
 * and client; client and invoice events on client; webhook notices on none. The tests subscribe
 * with every filter to every type and check that the server accepts exactly these.
 */
const filtersOf = (type) => {
  if (type.startsWith('TIMER_') || type.startsWith('TIME_ENTRY_')) {
    return ['project_ids', 'client_ids', 'user_ids', 'billable'];
  }
  if (type.startsWith('PROJECT_')) {
    return ['project_ids', 'client_ids'];
  }
  if (type.startsWith('CLIENT_') || type.startsWith('INVOICE_')) {
    return ['client_ids'];
  }
  return [];
};

/** A property's schema with `$ref` followed and a nullable `oneOf` reduced to its non-null side. */
const resolve = (schema, root) => {
  let s = schema || {};
  if (Array.isArray(s.oneOf)) {
    s = s.oneOf.find((alt) => alt.type !== 'null') || {};
  }
  if (typeof s.$ref === 'string') {
    const name = s.$ref.replace('#/$defs/', '');
    s = { ...((root.$defs && root.$defs[name]) || {}), ...s, $ref: undefined };
  }
  return s;
};

/** The Zapier field type of a JSON Schema type (the first that is not null). */
const fieldType = (schema) => {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t && t !== 'null');
  if (type === 'integer' || type === 'number' || type === 'boolean') {
    return type;
  }
  return 'string';
};

/**
 * Output fields from the schema of an event type: nested objects as `parent__child` and arrays
 * of objects as `parent[]child` (Zapier's notation), labelled from the property names.
 */
const outputFields = (schema) => {
  const fields = [];
  const walk = (props, keyPrefix, labelPrefix) => {
    for (const [name, raw] of Object.entries(props || {})) {
      const prop = resolve(raw, schema);
      const label = `${labelPrefix}${humanize(name)}`;
      if (prop.type === 'object' && prop.properties) {
        walk(prop.properties, `${keyPrefix}${name}__`, `${label} `);
      } else if (prop.type === 'array') {
        const items = resolve(prop.items, schema);
        if (items.type === 'object' && items.properties) {
          walk(items.properties, `${keyPrefix}${name}[]`, `${label} `);
        } else {
          fields.push({ key: `${keyPrefix}${name}`, label, list: true });
        }
      } else {
        fields.push({ key: `${keyPrefix}${name}`, label, type: fieldType(prop) });
        // The decimal amount the app adds beside a minor-unit amount (lib/money.js).
        const twin = decimalKey(name);
        if (twin && props.currency && fieldType(prop) === 'integer' && !(twin in props)) {
          fields.push({ key: `${keyPrefix}${twin}`, label: `${labelPrefix}${humanize(twin)}`, type: 'string' });
        }
      }
    }
  };
  walk(schema.properties, '', '');
  return fields;
};

/** Every subscribable type of the catalog with what its trigger needs. */
const eventTypes = () =>
  catalog.map((entry) => ({
    type: entry.type,
    key: triggerKey(entry.type),
    noun: noun(entry.type),
    label: labelOf(entry.type),
    description: entry.description,
    filters: filtersOf(entry.type),
    outputFields: outputFields(entry.schema),
    sample: withDecimals(entry.sample),
  }));

module.exports = { catalog, eventTypes, filtersOf, labelOf, outputFields, triggerKey };
