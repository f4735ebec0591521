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

/** How far a delivery's `webhook-timestamp` may be from now, in seconds (Standard Webhooks'
 * tolerance): a captured delivery cannot be replayed later than that. */
const TOLERANCE_SECONDS = 5 * 60;

/** Whether `rawRequest` carries a signature of its body by `secret`, made within
 * `TOLERANCE_SECONDS` of `now` (seconds since the epoch). */
const verify = (secret, rawRequest, now = Math.floor(Date.now() / 1000)) => {
  const id = header(rawRequest, 'webhook-id');
  const timestamp = header(rawRequest, 'webhook-timestamp');
  const signatures = header(rawRequest, 'webhook-signature');
  if (!id || !timestamp || !signatures || typeof rawRequest.content !== 'string') {
    return false;
  }
  if (!/^\d{1,12}$/.test(String(timestamp)) || Math.abs(now - Number(timestamp)) > TOLERANCE_SECONDS) {
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

module.exports = { verify, header, TOLERANCE_SECONDS };
