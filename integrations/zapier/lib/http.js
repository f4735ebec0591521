'use strict';

// Every request of the app goes through these two middlewares: the connection's base URL and key
// are added on the way out, and timetrack's JSON errors become Zapier errors on the way back.

/** The connection's base URL without a trailing slash, or an error saying what is wrong with it. */
const baseUrl = (z, bundle) => {
  const raw = String((bundle.authData && bundle.authData.base_url) || '').trim();
  let url;
  try {
    url = new URL(raw);
  } catch {
    throw new z.errors.Error(
      `Base URL must be the address of your timetrack, such as https://timetrack.example.com (got "${raw}")`,
      'invalid_base_url',
      400,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new z.errors.Error(
      `Base URL must start with https:// (got "${raw}")`,
      'invalid_base_url',
      400,
    );
  }
  return raw.replace(/\/+$/, '');
};

/** Before every request: a path is resolved against the base URL, and the key is sent. */
const addBaseUrlAndKey = (request, z, bundle) => {
  if (request.url.startsWith('/')) {
    request.url = baseUrl(z, bundle) + request.url;
  }
  // 429 is raised by raiseErrors below, with timetrack's own message (Zapier's early handler
  // would replace it with a generic one).
  request.throwForThrottlingEarly = false;
  request.headers = request.headers || {};
  request.headers.Accept = 'application/json';
  const key = String((bundle.authData && bundle.authData.api_key) || '').trim();
  if (key) {
    request.headers.Authorization = `Bearer ${key}`;
  }
  return request;
};

/** The `error` text of a timetrack error body, or the status when the body is not one. */
const errorText = (response) => {
  try {
    const body = JSON.parse(response.content);
    if (body && typeof body.error === 'string' && body.error) {
      return body.error;
    }
  } catch {
    // not JSON: a proxy's page, say
  }
  return `timetrack answered HTTP ${response.status}`;
};

/**
 * After every response: 429 is Zapier's throttled error with the server's `Retry-After` (Zapier
 * tries again after it), any other 4xx or 5xx an error carrying timetrack's own message.
 */
const raiseErrors = (response, z) => {
  if (response.status === 429) {
    const retryAfter = Number.parseInt(response.headers.get('retry-after'), 10);
    throw new z.errors.ThrottledError(
      errorText(response),
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 60,
    );
  }
  if (response.status >= 400) {
    throw new z.errors.Error(errorText(response), `http_${response.status}`, response.status);
  }
  return response;
};

module.exports = { addBaseUrlAndKey, raiseErrors, baseUrl, errorText };
