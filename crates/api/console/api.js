// The public JSON API, with the key kept in sessionStorage only (gone when the tab closes).

const KEY = "timetrack.apiKey";

export const session = {
  get key() {
    return sessionStorage.getItem(KEY);
  },
  set key(value) {
    sessionStorage.setItem(KEY, value);
  },
  forget() {
    sessionStorage.removeItem(KEY);
  },
};

/** A failed call: `message` is the API's own error message, ready to show; `detail` what the API
 * said about it, when it did ([`describe`] shows both). */
export class ApiError extends Error {
  constructor(status, message, detail) {
    super(message);
    this.status = status;
    this.detail = typeof detail === "string" ? detail : undefined;
  }
}

/** What to show for a failure: the API's message, then its detail ("Invalid URL format: http is
 * refused ..."), or the error's own text. */
export function describe(err) {
  if (err instanceof ApiError) return err.detail ? `${err.message}: ${err.detail}` : err.message;
  return String(err?.message ?? err);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Called when the key stops working (401 on a call other than the sign-in check). */
export let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

/** The text each answer was parsed from, for what must be shown byte for byte. */
const texts = new WeakMap();

/**
 * The exact bytes of the `payload` of a delivery's detail as answered (the body as sent, which
 * its signatures cover), or null. The answer is `{...D, "payload": <raw>, "attempts_log": [...]}`
 * with `payload` embedded as stored; in JSON text a `"` inside a string is always escaped, so
 * the first unescaped `"payload":` is the field's, and the last `,"attempts_log":` follows it.
 */
export function rawPayload(detail) {
  const text = texts.get(detail);
  if (!text) return null;
  const start = text.indexOf('"payload":');
  const end = text.lastIndexOf(',"attempts_log":');
  return start >= 0 && end > start ? text.slice(start + '"payload":'.length, end) : null;
}

/**
 * Calls the API. Reads (GET) are tried again after a lost connection, and after a 429 once its
 * Retry-After has passed, up to three times; writes never are, since the first may have arrived.
 * A 429 that is shown says when to try again.
 */
export async function api(method, path, body, key = session.key) {
  const read = method === "GET";
  for (let attempt = 0; ; attempt += 1) {
    let response;
    try {
      const headers = { Accept: "application/json" };
      if (key) headers.Authorization = `Bearer ${key}`;
      if (body !== undefined) headers["Content-Type"] = "application/json";
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
        credentials: "omit",
      });
    } catch {
      if (read && attempt < 3) {
        await sleep(500 * 2 ** attempt);
        continue;
      }
      throw new ApiError(
        0,
        read
          ? "Connection lost: the server did not answer (tried 4 times). Check it and try again."
          : "Connection lost: this change may or may not have been made. Reload to see, then try again if needed.",
      );
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (response.ok) {
      if (data && typeof data === "object") texts.set(data, text);
      return data;
    }
    // A read refused for the rate limit is tried again when the server says it may be (up to a
    // minute away), so the view being read is not lost to a burst of reads.
    if (response.status === 429 && read && attempt < 3) {
      const wait = Number(response.headers.get("Retry-After"));
      if (Number.isFinite(wait) && wait >= 0 && wait <= 60) {
        await sleep(wait * 1000 + 100);
        continue;
      }
    }
    let message =
      data && typeof data.error === "string" ? data.error : `HTTP ${response.status}`;
    if (response.status === 429) {
      const wait = response.headers.get("Retry-After");
      message = wait ? `${message}: try again in ${wait} s` : `${message}: try again shortly`;
    }
    if (response.status === 401 && path !== "/api/me") onUnauthorized();
    throw new ApiError(response.status, message, data?.detail);
  }
}

/**
 * Downloads `path` (a CSV export) as the file `name`: the key goes in a header, so the file is
 * fetched here and handed to the browser as a blob, never as a link carrying the key.
 */
export async function download(path, name) {
  let response;
  try {
    response = await fetch(path, {
      headers: { Accept: "text/csv", Authorization: `Bearer ${session.key}` },
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new ApiError(0, "Connection lost: the server did not answer. Check it and try again.");
  }
  if (!response.ok) {
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    const message = data && typeof data.error === "string" ? data.error : `HTTP ${response.status}`;
    throw new ApiError(response.status, data?.detail ? `${message}: ${data.detail}` : message, data?.detail);
  }
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export const HOOKS = "/api/integrations/automation/webhooks";
export const hook = (id) => `${HOOKS}/${encodeURIComponent(id)}`;

/** A query string from the given non-empty values. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(name, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}
