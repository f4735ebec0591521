'use strict';

// Labels and output fields in Zapier's conventions.

/** Words Zapier writes in capitals. */
const CAPITALS = { Id: 'ID', Ids: 'IDs', Url: 'URL', Api: 'API' };

/** `teamMember` -> `Team Member`, `client_id` -> `Client ID`, `changedFields` -> `Changed Fields`. */
const humanize = (key) =>
  key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/_/g, ' ')
    .replace(/\b\w/g, (c) => c.toUpperCase())
    .split(' ')
    .map((word) => CAPITALS[word] || word)
    .join(' ');

/** The Zapier type of a sample value. */
const typeOf = (value) => {
  if (typeof value === 'boolean') return 'boolean';
  if (Number.isInteger(value)) return 'integer';
  if (typeof value === 'number') return 'number';
  return 'string';
};

/**
 * Output fields from a sample answer: nested objects as `parent__child`, arrays of objects as
 * `parent[]child`, other arrays as lists, labelled from the keys.
 */
const fieldsOf = (sample) => {
  const fields = [];
  const walk = (object, keyPrefix, labelPrefix) => {
    for (const [name, value] of Object.entries(object)) {
      const key = `${keyPrefix}${name}`;
      const label = `${labelPrefix}${humanize(name)}`;
      if (Array.isArray(value)) {
        if (value.length > 0 && value[0] && typeof value[0] === 'object') {
          walk(value[0], `${key}[]`, `${label} `);
        } else {
          fields.push({ key, label, list: true });
        }
      } else if (value && typeof value === 'object') {
        walk(value, `${key}__`, `${label} `);
      } else {
        fields.push({ key, label, type: typeOf(value) });
      }
    }
  };
  walk(sample, '', '');
  return fields;
};

module.exports = { fieldsOf, humanize };
