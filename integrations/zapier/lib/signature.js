'use strict';

const crypto = require('crypto');

// Deliveries are signed the Standard Webhooks way: `webhook-signature` holds `v1,<base64>`
// entries, each an HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` under the secret
// (`whsec_<base64>`) the subscription returned.

/** A header of Zapier's raw request, whatever its case, with or without Zapier's `Http-` prefix. */
const header = (rawRequest, name) => {
  const headers = (rawRequest && rawRequest.headers) || {};
  for (const [key, value] of Object.entries(headers)) {
    const k = key.toLowerCase();
    if (k === name || k === `http-${name}`) {
      return Array.isArray(value) ? value[0] : value;
    }
  }
  return undefined;
};

/** Whether `rawRequest` carries a signature of its body by `secret`. */
const verify = (secret, rawRequest) => {
  const id = header(rawRequest, 'webhook-id');
  const timestamp = header(rawRequest, 'webhook-timestamp');
  const signatures = header(rawRequest, 'webhook-signature');
  if (!id || !timestamp || !signatures || typeof rawRequest.content !== 'string') {
    return false;
  }
  const key = Buffer.from(String(secret).replace(/^whsec_/, ''), 'base64');
  const expected = crypto
    .createHmac('sha256', key)
    .update(`${id}.${timestamp}.${rawRequest.content}`)
    .digest();
  return String(signatures)
    .split(' ')
    .some((entry) => {
      const [version, value] = entry.split(',');
      if (version !== 'v1' || !value) {
        return false;
      }
      const given = Buffer.from(value, 'base64');
      return given.length === expected.length && crypto.timingSafeEqual(given, expected);
    });
};

module.exports = { verify, header };
