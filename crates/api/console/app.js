// The delivery console: a page over the public JSON API, for the owner of the API key it holds.

import { api, ApiError, describe, HOOKS, hook, query, rawPayload, session, whenUnauthorized } from "./api.js";
import { statsCharts } from "./chart.js";
import { reportParams, reportsView } from "./reports.js";
import { invoiceParams, invoiceView, invoicesView, newInvoiceView } from "./invoices.js";
import {
  append, clear, copyButton, field, h, localToRfc3339, relative, replace, rfc3339ToLocal, say, stamp,
  status, when, zoneName,
} from "./dom.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const signOut = document.getElementById("signout");

/** The signed-in caller (`GET /api/me`), and the event catalog once read. */
let me = null;
let catalog = null;

const message = describe;

/** The address whose view the page shows now (set when a view is shown). */
let shownHash = null;

function show(...children) {
  main.removeAttribute("aria-busy");
  replace(main, ...children);
  main.focus({ preventScroll: true });
  shownHash = location.hash;
}

/**
 * Each view that starts takes a ticket; a view whose loads finish after another view started
 * (the user moved on) renders nothing, so a slow answer never replaces the page being looked at.
 */
let generation = 0;
function view() {
  generation += 1;
  const ticket = generation;
  const current = () => ticket === generation;
  // Read again in place (Refresh, after a write, another page of the same view): what is shown
  // stays until the new answer arrives, and a failed read does not wipe it.
  const again = () => main.childElementCount > 0 && shownHash === location.hash;
  return {
    current,
    show: (...children) => {
      if (current()) show(...children);
    },
    loading: (what) => {
      if (!current()) return;
      if (again()) main.setAttribute("aria-busy", "true");
      else show(h("p", { class: "loading" }, `Loading ${what}…`));
    },
    failure: (err, retry) => {
      if (!current()) return;
      main.removeAttribute("aria-busy");
      // Not found stays not found: a way back instead of "Try again".
      const gone = err instanceof ApiError && err.status === 404;
      const banner = h("div", { class: "status error banner", role: "alert" }, message(err), " ",
        gone
          ? h("a", { href: "#/webhooks" }, "Back to the webhooks")
          : retry ? h("button", { type: "button", onclick: retry }, "Try again") : null);
      if (again() && !gone) {
        main.querySelector(".banner")?.remove();
        main.prepend(banner);
      } else {
        show(banner);
      }
    },
  };
}

/** "HTTP 500", the error, or both when the error says more than the status. */
function lastAnswer(code, error) {
  const status = code ? `HTTP ${code}` : "";
  if (!error || error === status) return status || "—";
  return status ? `${status}: ${error}` : error;
}

/** The health badge; a webhook its owner paused reads "paused". */
function badge(state, w = undefined) {
  const known = ["healthy", "failing", "disabled", "unknown"].includes(state) ? state : "unknown";
  const text = known === "disabled" && w?.disabled_reason === "manual" ? "paused" : known;
  return h("span", { class: `badge ${known}` }, text);
}

/** Why a webhook is disabled, in words (`W.disabled_reason`). */
const DISABLED_WHY = {
  manual: "paused by its owner",
  failing: "its deliveries failed for too long",
  key_revoked: "the API key it was created with was revoked",
};

function statusText(w) {
  if (w.status !== "DISABLED") return w.status;
  const why = DISABLED_WHY[w.disabled_reason];
  return why ? `DISABLED: ${why}` : "DISABLED";
}

async function eventTypes() {
  if (!catalog) {
    catalog = await api("GET", "/api/integrations/automation/event-types");
  }
  return catalog;
}

// ---------------------------------------------------------------------------------------------
// Sign-in

function signInView(problem) {
  const v = view();
  nav.hidden = true;
  who.hidden = true;
  signOut.hidden = true;
  const input = h("input", {
    type: "password", name: "key", autocomplete: "off", spellcheck: "false", required: true,
  });
  const out = status();
  if (problem) say(out, problem);
  const form = h("form", { class: "card narrow", "aria-label": "Sign in" },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste an API key of your workspace. It is kept in this tab only and forgotten when the tab closes."),
    field("API key", input),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in")),
    out);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) {
      say(out, "Paste an API key first");
      return;
    }
    say(out, "Checking…", true);
    try {
      me = await api("GET", "/api/me", undefined, key);
      session.key = key;
      route();
    } catch (err) {
      say(out, err instanceof ApiError && err.status === 401
        ? "That key was not accepted (Unauthorized)"
        : message(err));
    }
  });
  v.show(form);
  input.focus();
}

function signedIn() {
  nav.hidden = false;
  signOut.hidden = false;
  who.hidden = false;
  replace(who, `${me.user?.name ?? ""} · ${me.workspace?.name ?? ""}`);
}

signOut.addEventListener("click", () => {
  session.forget();
  me = null;
  catalog = null;
  location.hash = "#/webhooks";
  signInView();
});

whenUnauthorized(() => {
  session.forget();
  me = null;
  signInView("Your key is no longer accepted; sign in again.");
});

// ---------------------------------------------------------------------------------------------
// Webhooks

async function webhooksView() {
  const v = view();
  v.loading("webhooks");
  let hooks;
  try {
    hooks = (await api("GET", HOOKS)).webhooks;
  } catch (err) {
    v.failure(err, webhooksView);
    return;
  }
  const list = hooks.length
    ? h("ul", { class: "hooks" }, hooks.map((w) => {
      const health = w.health ?? {};
      return h("li", { class: "card hook" },
        h("div", { class: "hook-head" },
          h("a", { href: `#/webhooks/${encodeURIComponent(w.id)}`, class: "url" }, w.url),
          badge(health.state, w)),
        w.description ? h("p", { class: "description" }, w.description) : null,
        h("dl", { class: "facts" },
          h("dt", {}, "Status"), h("dd", {}, statusText(w)),
          h("dt", {}, "Events"), h("dd", {}, w.events.join(", ")),
          h("dt", {}, "Last success"), h("dd", {}, stamp(health.last_success_at, { ago: true })),
          h("dt", {}, "Failing since"), h("dd", {}, stamp(health.failing_since, { ago: true })),
          h("dt", {}, "Pending"), h("dd", {}, String(health.pending_deliveries ?? 0))));
    }))
    : h("p", { class: "empty" }, "No webhooks yet. Subscribe one to start receiving events.");
  v.show(
    h("div", { class: "title-row" },
      h("h1", {}, "Webhooks"),
      h("a", { class: "button", href: "#/new" }, "Subscribe a webhook")),
    list);
}

function eventChoices(types, chosen = []) {
  const box = h("fieldset", { class: "events" }, h("legend", {}, "Events"));
  // Invoice events are for owners and admins: a member's subscribe naming one is refused.
  const member = me?.role === "member";
  for (const t of types.filter((t) => t.subscribable && !(member && t.type.startsWith("INVOICE_")))) {
    const id = `ev-${t.type}`;
    box.append(h("div", { class: "check" },
      h("input", { type: "checkbox", id, value: t.type, checked: chosen.includes(t.type) }),
      h("label", { for: id }, t.type, h("span", { class: "hint" }, ` ${t.description}`))));
  }
  return box;
}

const checked = (box) => [...box.querySelectorAll("input:checked")].map((i) => i.value);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Chooses ids by name: a search (the list endpoint's `?q=`, as typed), its matches in a list,
 * *Add*, and the chosen ones as chips that can be removed. An id pasted into the search is
 * added as it is. `read()` gives the chosen ids.
 *
 * `what` names the things ("clients"); `path` lists them (`/api/clients`); `name(item)` says
 * one. Chosen ids are named from the first page of the list, or (`one`) read one by one; an id
 * that is neither (deleted since) shows as the id.
 */
function idPicker(legend, hint, { what, path, name, one }, chosen = []) {
  const picked = new Map(chosen.map((id) => [id, null]));
  const found = new Map();
  const chips = h("ul", { class: "chips", "aria-label": `Chosen ${what}` });
  const search = h("input", { type: "search", placeholder: `Find ${what} by name`, autocomplete: "off", "aria-label": `Find ${what}` });
  const matches = h("select", { "aria-label": `Matching ${what}` });
  const problem = h("span", { class: "hint", role: "status" });
  const draw = () => replace(chips, picked.size
    ? [...picked.keys()].map((id) => {
      const label = picked.get(id) ?? found.get(id) ?? id;
      return h("li", { class: "chip" }, h("span", { title: id }, label),
        h("button", {
          type: "button",
          class: "quiet",
          "aria-label": `Remove ${label} from the ${what}`,
          onclick: () => {
            picked.delete(id);
            draw();
            problem.textContent = `Removed ${label}.`;
            search.focus();
          },
        }, "×"));
    })
    : h("li", { class: "hint" }, `Any ${what.replace(/s$/, "")}`));
  let asked = 0;
  const find = async () => {
    asked += 1;
    const ticket = asked;
    let page;
    try {
      page = await api("GET", `${path}${query({ q: search.value.trim(), limit: 50 })}`);
    } catch (err) {
      if (ticket === asked) replace(matches, h("option", { value: "" }, message(err)));
      return;
    }
    if (ticket !== asked) return;
    // The chips are drawn again only when a chosen id got its name.
    const unnamed = [...picked.keys()].filter((id) => !picked.get(id) && !found.has(id));
    for (const item of page.data) found.set(item.id, name(item));
    replace(matches, page.data.length
      ? page.data.map((item) => h("option", { value: item.id }, name(item)))
      : h("option", { value: "" }, "No match"));
    if (unnamed.some((id) => found.has(id))) draw();
  };
  let typing = null;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      typing = null;
      find();
    }, 250);
  });
  const add = async () => {
    // Enter before the search caught up with the typing: search first, then add its match.
    if (typing) {
      clearTimeout(typing);
      typing = null;
      await find();
    }
    const typed = search.value.trim();
    const id = UUID.test(typed) ? typed.toLowerCase() : matches.value;
    if (!id) {
      problem.textContent = `Choose one of the ${what} found`;
      return;
    }
    picked.set(id, found.get(id) ?? null);
    problem.textContent = `Added ${found.get(id) ?? id}.`;
    if (UUID.test(typed)) search.value = "";
    draw();
  };
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      add();
    }
  });
  const box = h("fieldset", { class: "picker" }, h("legend", {}, legend),
    chips,
    h("div", { class: "picker-row" }, search, matches,
      h("button", { type: "button", class: "quiet", "aria-label": `Add to the ${what}`, onclick: add }, "Add")),
    h("p", { class: "hint" }, hint, " ", problem));
  draw();
  // The list is read when the search is first used, or at once to name ids already chosen;
  // chosen ids not on its first page are named one by one.
  replace(matches, h("option", { value: "" }, "Type to search, or pick from the list"));
  search.addEventListener("focus", () => {
    if (!asked) find();
  }, { once: true });
  matches.addEventListener("focus", () => {
    if (!asked) find();
  }, { once: true });
  if (picked.size) {
    find().then(async () => {
      if (!one) return;
      for (const id of picked.keys()) {
        if (found.has(id)) continue;
        try {
          found.set(id, name(await api("GET", one(id))));
        } catch {
          // Deleted since, or never seen: shown as the id.
        }
      }
      draw();
    });
  }
  return { box, read: () => [...picked.keys()] };
}

/** Filter inputs, and a reader that makes the `filters` object from them. */
function filterFields(filters = {}) {
  const projects = idPicker("Projects", "Only events of these projects.", {
    what: "projects", path: "/api/projects", name: (p) => p.name, one: (id) => `/api/projects/${encodeURIComponent(id)}`,
  }, filters.project_ids ?? []);
  const clients = idPicker("Clients", "Only events of these clients.", {
    what: "clients", path: "/api/clients", name: (c) => c.name, one: (id) => `/api/clients/${encodeURIComponent(id)}`,
  }, filters.client_ids ?? []);
  const users = idPicker("Members", "Only events of these members' time.", {
    what: "members", path: "/api/members", name: (m) => `${m.name} <${m.email}>`,
  }, filters.user_ids ?? []);
  const billable = h("select", {},
    h("option", { value: "" }, "any"),
    h("option", { value: "true" }, "billable only"),
    h("option", { value: "false" }, "non-billable only"));
  billable.value = filters.billable === undefined || filters.billable === null ? "" : String(filters.billable);
  const box = h("fieldset", { class: "filters" }, h("legend", {}, "Filters (optional)"),
    projects.box, clients.box, users.box,
    field("Billable", billable, "Time-entry events only"));
  const read = () => {
    const out = {};
    if (projects.read().length) out.project_ids = projects.read();
    if (clients.read().length) out.client_ids = clients.read();
    if (users.read().length) out.user_ids = users.read();
    if (billable.value) out.billable = billable.value === "true";
    return out;
  };
  return { box, read };
}

function secretShown(secret, note) {
  return h("div", { class: "secret card", role: "region", "aria-label": "Signing secret" },
    h("p", {}, h("strong", {}, "Signing secret — shown once. "), note ?? "Store it now; it cannot be read again."),
    h("code", { class: "secret-value", tabindex: "0" }, secret),
    copyButton(secret, "Copy secret"));
}

async function newWebhookView() {
  const v = view();
  v.loading("event types");
  let types;
  try {
    types = await eventTypes();
  } catch (err) {
    v.failure(err, newWebhookView);
    return;
  }
  const url = h("input", { type: "url", required: true, placeholder: "https://example.com/hooks/timetrack" });
  const description = h("input", { type: "text", maxlength: 500 });
  const events = eventChoices(types, ["TIMER_STARTED", "TIMER_STOPPED"]);
  const filters = filterFields();
  const out = status();
  const result = h("div");
  const form = h("form", { class: "card", "aria-label": "Subscribe a webhook" },
    field("URL (HTTPS)", url),
    events,
    field("Description", description, "Optional, for you"),
    filters.box,
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Subscribe"),
      h("a", { href: "#/webhooks", class: "button quiet" }, "Cancel")),
    out);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { url: url.value.trim(), events: checked(events) };
    if (description.value.trim()) body.description = description.value.trim();
    const f = filters.read();
    if (Object.keys(f).length) body.filters = f;
    say(out, "Subscribing…", true);
    try {
      const answer = await api("POST", `${HOOKS}/subscribe`, body);
      clear(out);
      form.remove();
      replace(result,
        h("p", { class: "status ok", role: "status" }, `Subscribed ${answer.webhook.url}.`),
        secretShown(answer.webhook.secret),
        h("div", { class: "actions" },
          h("a", { class: "button", href: `#/webhooks/${encodeURIComponent(answer.webhook.id)}` }, "Open the webhook"),
          h("a", { class: "button quiet", href: "#/webhooks" }, "Back to the list")));
    } catch (err) {
      say(out, message(err));
    }
  });
  v.show(h("h1", {}, "Subscribe a webhook"), form, result);
  url.focus();
}

// ---------------------------------------------------------------------------------------------
// One webhook

function action(label, run, { danger = false, name = undefined } = {}) {
  const out = status();
  const button = h("button", { type: "button", class: danger ? "danger" : "", "aria-label": name }, label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await run(out);
    } catch (err) {
      say(out, message(err));
    } finally {
      button.disabled = false;
    }
  });
  return { button, out };
}

/**
 * A question asked before a change that cannot be taken back: hidden until `ask()`, then the
 * focus is on *Cancel* (Enter alone never confirms) and Escape cancels. `run(out)` does the change.
 */
function confirmation(question, yes, run, { danger = false, back } = {}) {
  const box = h("div", { class: "confirm", hidden: true, role: "group", "aria-label": yes });
  const confirmed = action(yes, run, { danger });
  const cancel = () => {
    box.hidden = true;
    back?.focus();
  };
  const no = h("button", { type: "button", class: "quiet", onclick: cancel }, "Cancel");
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      cancel();
    }
  });
  const text = h("p", {});
  append(box, text, h("div", { class: "actions" }, confirmed.button, no), confirmed.out);
  return {
    box,
    ask: () => {
      replace(text, typeof question === "function" ? question() : question);
      clear(confirmed.out);
      box.hidden = false;
      no.focus();
    },
  };
}

/** Seconds in words: "1 day", "2 h 30 min", "45 s". */
function duration(seconds) {
  const parts = [];
  for (const [size, unit] of [[86400, "day"], [3600, "h"], [60, "min"], [1, "s"]]) {
    const n = Math.floor(seconds / size);
    if (n > 0) {
      parts.push(unit === "day" ? `${n} ${n === 1 ? "day" : "days"}` : `${n} ${unit}`);
      seconds -= n * size;
    }
  }
  return parts.slice(0, 2).join(" ") || "0 s";
}

/** What a rotation with the "valid for" field's value will do, and the value to send. */
function rotationPlan(raw) {
  const text = raw.trim();
  if (text === "") {
    return {
      body: {},
      says: `The current secret keeps signing beside the new one for 1 day (86400 s, the default), until ${when(new Date(Date.now() + 86400_000).toISOString())}.`,
    };
  }
  if (!/^\d+$/.test(text)) {
    // Sent as typed: the API says what is wrong with it.
    return { body: { previous_valid_for_seconds: text }, says: "Enter whole seconds from 0 to 604800, or leave it empty for 1 day." };
  }
  const seconds = Number(text);
  if (seconds === 0) {
    return {
      body: { previous_valid_for_seconds: 0 },
      says: "The current secret stops signing at once: a receiver still verifying with it rejects every delivery from now on.",
    };
  }
  return {
    body: { previous_valid_for_seconds: seconds },
    says: seconds > 604800
      ? "At most 604800 seconds (7 days)."
      : `The current secret keeps signing beside the new one for ${duration(seconds)}, until ${when(new Date(Date.now() + seconds * 1000).toISOString())}.`,
  };
}

/**
 * One webhook. Every write (save, rotate, pause, enable, replay) is followed by reading the
 * webhook again, and the page is drawn from that answer, so it always shows the server's state;
 * `flash` carries the write's outcome (and a new secret) into the new drawing, beside the control
 * that made it.
 */
async function webhookView(id, flash = undefined) {
  const v = view();
  v.loading("the webhook");
  let w;
  let types;
  let stats;
  try {
    [w, types, stats] = await Promise.all([
      api("GET", hook(id)).then((a) => a.webhook),
      eventTypes(),
      api("GET", `${hook(id)}/stats`).then((a) => a.buckets),
    ]);
  } catch (err) {
    v.failure(err, () => webhookView(id, flash));
    return;
  }
  const health = w.health ?? {};
  const redraw = (next) => {
    if (v.current()) webhookView(id, next);
  };

  // Settings
  const url = h("input", { type: "url", value: w.url, required: true });
  const description = h("input", { type: "text", value: w.description ?? "", maxlength: 500 });
  const events = eventChoices(types, w.events);
  const filters = filterFields(w.filters ?? {});
  const saved = status();
  const settings = h("form", { class: "card", "aria-label": "Settings" },
    h("h2", {}, "Settings"),
    field("URL (HTTPS)", url), events, field("Description", description), filters.box,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save changes")),
    saved);
  settings.addEventListener("submit", async (event) => {
    event.preventDefault();
    say(saved, "Saving…", true);
    try {
      await api("PATCH", hook(id), {
        url: url.value.trim(),
        events: checked(events),
        description: description.value,
        filters: filters.read(),
      });
      redraw({ op: "save", text: "Saved." });
    } catch (err) {
      say(saved, message(err));
    }
  });

  // Operations
  // A test is a WEBHOOK_TEST, or a chosen type's catalog sample sent as that type.
  const testType = h("select", {},
    h("option", { value: "" }, "WEBHOOK_TEST (names this webhook)"),
    types.filter((t) => t.type !== "WEBHOOK_TEST" && !(me?.role === "member" && t.type.startsWith("INVOICE_")))
      .map((t) => h("option", { value: t.type }, `${t.type} (the catalog's sample)`)));
  const test = action("Send test", async (out) => {
    say(out, "Sending…", true);
    const answer = await api("POST", `${hook(id)}/test`, testType.value ? { event_type: testType.value } : {});
    const delivery = await settle(id, answer.delivery.id);
    say(out, delivery.status === "DELIVERED"
      ? `Test delivered (HTTP ${delivery.last_status_code}).`
      : `Test ${delivery.status.toLowerCase()}: ${delivery.last_error ?? `HTTP ${delivery.last_status_code ?? "?"}`}.`,
    delivery.status === "DELIVERED");
    out.append(" ", h("a", { href: `#/webhooks/${encodeURIComponent(id)}/deliveries${query({ open: delivery.id })}` }, "See the delivery log"));
  });

  const validFor = h("input", { type: "number", min: 0, max: 604800, placeholder: "86400 (1 day)" });
  const plan = h("p", { class: "hint", "aria-live": "polite" });
  const showPlan = () => replace(plan, rotationPlan(validFor.value).says);
  validFor.addEventListener("input", showPlan);
  showPlan();
  const rotated = h("div");
  const rotate = action("Rotate secret…", async () => rotateConfirm.ask());
  const rotateConfirm = confirmation(
    () => `Rotate the signing secret now? ${rotationPlan(validFor.value).says}`,
    "Yes, rotate the secret",
    async () => {
      const answer = await api("POST", `${hook(id)}/rotate-secret`, rotationPlan(validFor.value).body);
      redraw({
        op: "rotate",
        text: "Rotated.",
        secret: answer.secret,
        note: answer.previous_expires_at
          ? `The previous secret still signs until ${when(answer.previous_expires_at)}.`
          : "The previous secret no longer signs.",
      });
    },
    { back: rotate.button },
  );

  // Pause (when active) or enable (when disabled, unless its key was revoked).
  const replaySince = h("input", {
    type: "datetime-local",
    value: w.status === "DISABLED"
      ? rfc3339ToLocal(w.disabled_reason === "manual" ? w.updated_at : health.failing_since ?? w.updated_at)
      : "",
  });
  const enable = action("Enable", async () => {
    const since = localToRfc3339(replaySince.value);
    const answer = await api("POST", `${hook(id)}/enable`, since ? { replay_since: since } : {});
    redraw({
      op: "state",
      text: `Enabled${since ? `; ${answer.replayed} missed ${answer.replayed === 1 ? "event" : "events"} queued again` : ""}.`,
    });
  });
  const pause = action("Pause…", async () => pauseConfirm.ask());
  const pauseConfirm = confirmation(
    "Pause this webhook? Nothing is sent to it and its queued deliveries are cancelled until you enable it again; then replay from the pause to receive what it missed.",
    "Yes, pause it",
    async () => {
      await api("POST", `${hook(id)}/disable`);
      redraw({ op: "state", text: "Paused. Enable it to resume." });
    },
    { back: pause.button },
  );
  let stateOp;
  if (w.status === "ACTIVE") {
    stateOp = h("div", { class: "op" },
      h("p", {}, "Pause deliveries while the receiver is down for maintenance."),
      pause.button, pause.out, pauseConfirm.box);
  } else if (w.disabled_reason === "key_revoked") {
    stateOp = h("div", { class: "op" },
      h("p", {}, "Disabled because the API key it was created with was revoked: it cannot be enabled. Subscribe again with a live key."));
  } else {
    stateOp = h("div", { class: "op" },
      h("p", {}, `Disabled: ${DISABLED_WHY[w.disabled_reason] ?? "it receives nothing"}.`),
      field(`Replay what it missed since (optional, ${zoneName()})`, replaySince,
        "Filled in with when it stopped receiving; clear it to enable without a replay"),
      enable.button, enable.out);
  }

  const from = h("input", { type: "datetime-local", required: true });
  const until = h("input", { type: "datetime-local" });
  const onlyFailed = h("input", { type: "checkbox", id: "only-failed", checked: true });
  const replay = action("Replay", async (out) => {
    const since = localToRfc3339(from.value);
    if (!since) {
      say(out, "Choose when the replay starts");
      return;
    }
    const body = { since, only_failed: onlyFailed.checked };
    const end = localToRfc3339(until.value);
    if (end) body.until = end;
    const answer = await api("POST", `${hook(id)}/replay`, body);
    redraw({
      op: "replay",
      text: `${answer.queued} events queued again${answer.truncated
        ? `; more remain from ${when(answer.next_since)}` : ""}.`,
    });
  });

  const del = action("Delete…", async () => deleteConfirm.ask(), { danger: true });
  const deleteConfirm = confirmation(
    "Delete this webhook? Queued deliveries are cancelled and nothing more is sent to it.",
    "Yes, delete this webhook",
    async (out) => {
      await api("DELETE", hook(id));
      say(out, "Deleted.", true);
      location.hash = "#/webhooks";
    },
    { danger: true, back: del.button },
  );

  // The last write's outcome, beside its control.
  const flashed = { save: saved, rotate: rotate.out, state: w.status === "ACTIVE" ? pause.out : enable.out, replay: replay.out };
  if (flash?.text && flashed[flash.op]) say(flashed[flash.op], flash.text, true);
  if (flash?.secret) replace(rotated, secretShown(flash.secret, flash.note));

  v.show(
    h("p", { class: "crumbs" }, h("a", { href: "#/webhooks" }, "Webhooks"), " / ", w.id, " ",
      copyButton(w.id, "Copy id", `Copy id of webhook ${w.id}`)),
    h("div", { class: "title-row" },
      h("h1", { class: "url" }, w.url), badge(health.state, w)),
    w.description ? h("p", { class: "description" }, w.description) : null,
    h("dl", { class: "facts card" },
      h("dt", {}, "Status"), h("dd", { class: "status-fact" }, statusText(w)),
      h("dt", {}, "Events"), h("dd", {}, w.events.join(", ")),
      h("dt", {}, "Last success"), h("dd", {}, stamp(health.last_success_at)),
      h("dt", {}, "Failing since"), h("dd", {}, stamp(health.failing_since)),
      h("dt", {}, "Consecutive failures"), h("dd", {}, String(health.consecutive_failures ?? 0)),
      h("dt", {}, "Last answer"), h("dd", {}, lastAnswer(health.last_status_code, health.last_error)),
      h("dt", {}, "Pending deliveries"), h("dd", {}, String(health.pending_deliveries ?? 0)),
      h("dt", {}, "Secret rotation"), h("dd", {}, w.secret_rotation
        ? ["previous secret signs until ", stamp(w.secret_rotation.previous_expires_at)] : "—")),
    h("p", {}, h("a", { class: "button", href: `#/webhooks/${encodeURIComponent(id)}/deliveries` }, "Delivery log")),
    statsCharts(stats, chartWidth()),
    h("section", { class: "card ops", "aria-label": "Operations" },
      h("h2", {}, "Operations"),
      h("div", { class: "op" }, h("p", {}, "Send one signed test delivery to this URL (also when disabled): one attempt, no retry, its kind is test."),
        field("Test event type", testType, "A type's sample arrives with that type in X-Webhook-Event, to try your handler for it"),
        test.button, test.out),
      h("div", { class: "op" },
        field("Previous secret stays valid for (seconds)", validFor, "Empty: 1 day; 0 stops it at once; at most 604800 (7 days)"),
        plan, rotate.button, rotate.out, rotateConfirm.box, rotated),
      stateOp,
      h("div", { class: "op" },
        field(`Replay from (${zoneName()})`, from),
        field(`Until (optional, ${zoneName()})`, until),
        h("div", { class: "check" }, onlyFailed, h("label", { for: "only-failed" }, "Only events not yet delivered")),
        replay.button, replay.out),
      h("div", { class: "op" }, del.button, del.out, deleteConfirm.box)),
    settings);
  if (flash?.op && flashed[flash.op]) flashed[flash.op].scrollIntoView({ block: "nearest" });
}

/** The width one of the two 24-hour charts gets, in CSS pixels (style.css: side by side, or one
 * above the other at 720 px and narrower; the figure's padding and border taken off). */
function chartWidth() {
  const narrow = window.matchMedia("(max-width: 720px)").matches;
  const inner = main.clientWidth - (narrow ? 24 : 48);
  return (narrow ? inner : (inner - 16) / 2) - 18;
}

/**
 * Reads a delivery until it is final, for a test's outcome: 9 reads over about 15 s at most
 * (an attempt may take the whole request time-out), spaced out so that they cost little of the
 * key's rate limit.
 */
async function settle(webhookId, deliveryId) {
  const waits = [300, 500, 800, 1200, 1600, 2000, 3000, 5000];
  for (let i = 0; ; i += 1) {
    const d = await api("GET", `${hook(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}`);
    if (d.status !== "PENDING" || i >= waits.length) return d;
    await new Promise((resolve) => setTimeout(resolve, waits[i]));
  }
}

// ---------------------------------------------------------------------------------------------
// Addresses and live refresh

/** The parameters of the address's query (`#/view?name=value`) among `names`. */
function hashParams(names) {
  const search = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const params = {};
  for (const name of names) {
    const value = search.get(name);
    if (value) params[name] = value;
  }
  return params;
}

/** Shows the view at `hash`: a new address, or the same one read again. */
function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

/**
 * Notes `params` in the address without showing the view again (an opened delivery or event), so
 * that a reload or a shared link shows the same.
 */
function note(path, params) {
  const hash = `#/${path}${query(params)}`;
  if (hash !== location.hash) {
    history.replaceState(null, "", hash);
    shownHash = location.hash;
  }
}

/** How often an open view is read again while it holds pending deliveries. */
const LIVE_EVERY = 5000;

/**
 * Runs `tick` every LIVE_EVERY ms while view `v` is the one shown and `tick` says there is more
 * to wait for (it answers whether any delivery shown is still pending). Nothing is read while
 * the tab is hidden; a failed read is tried again at the next tick, unless the thing read is
 * gone (404) or the key is (401). Each tick is one read: a view polled this way costs 12 reads
 * a minute of the key's rate limit. `live` is the element that says so while it runs.
 */
async function poll(v, live, tick) {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  live.hidden = false;
  try {
    for (;;) {
      await sleep(LIVE_EVERY);
      while (document.hidden && v.current()) {
        await new Promise((resolve) => document.addEventListener("visibilitychange", resolve, { once: true }));
      }
      if (!v.current() || !live.isConnected) return;
      try {
        if (!(await tick())) return;
      } catch (err) {
        if (err instanceof ApiError && (err.status === 404 || err.status === 401)) return;
      }
    }
  } finally {
    live.hidden = true;
  }
}

function liveNote() {
  return h("p", { class: "hint live", hidden: true }, "Live: read again every 5 s while deliveries are pending (not while this tab is hidden).");
}

const anyPending = (list) => list.some((d) => d.status === "PENDING");

// ---------------------------------------------------------------------------------------------
// The delivery log

const LOG_FILTERS = ["status", "event_type", "event_id", "entity_id"];
const LOG_PARAMS = [...LOG_FILTERS, "cursor", "open"];

/**
 * A webhook's delivery log. `params` are the address's: the filters (status, event type, event
 * id, entity id), the page (`cursor`) and the delivery shown open (`open`), so that a reload or
 * a link shows the same view.
 */
async function deliveriesView(id, params = {}) {
  const v = view();
  v.loading("deliveries");
  const here = `webhooks/${encodeURIComponent(id)}/deliveries`;
  const filters = Object.fromEntries(LOG_FILTERS.map((name) => [name, params[name]]));
  const listed = `${hook(id)}/deliveries${query({ ...filters, cursor: params.cursor })}`;
  let page;
  let types;
  let w;
  try {
    [w, types, page] = await Promise.all([
      api("GET", hook(id)).then((a) => a.webhook),
      eventTypes(),
      api("GET", listed),
    ]);
  } catch (err) {
    v.failure(err, () => deliveriesView(id, params));
    return;
  }
  const statusFilter = h("select", {},
    ["", "PENDING", "DELIVERED", "FAILED", "CANCELLED"].map((s) => h("option", { value: s }, s || "any")));
  statusFilter.value = params.status ?? "";
  const typeFilter = h("select", {},
    h("option", { value: "" }, "any"),
    types.map((t) => h("option", { value: t.type }, t.type)));
  typeFilter.value = params.event_type ?? "";
  const eventId = h("input", { type: "search", value: params.event_id ?? "", spellcheck: "false", autocomplete: "off" });
  const entityId = h("input", { type: "search", value: params.entity_id ?? "", spellcheck: "false", autocomplete: "off" });
  const filtered = LOG_FILTERS.some((name) => params[name]);
  const filterForm = h("form", { class: "toolbar", role: "search", "aria-label": "Filter and search deliveries" },
    field("Status", statusFilter), field("Event type", typeFilter),
    field("Event id", eventId), field("Entity id", entityId, "A time entry, client, project or invoice id"),
    h("button", { type: "submit" }, "Apply"),
    filtered ? h("a", { class: "button quiet", href: `#/${here}` }, "Clear filters") : null);
  filterForm.addEventListener("submit", (event) => {
    event.preventDefault();
    go(`#/${here}${query({
      status: statusFilter.value,
      event_type: typeFilter.value,
      event_id: eventId.value.trim(),
      entity_id: entityId.value.trim(),
    })}`);
  });

  const head = h("thead", {}, h("tr", {},
    ["Created", "Event", "Kind", "Status", "Attempts", "Last answer", ""].map((c) => h("th", { scope: "col" }, c))));
  const rows = new Map();
  let polling = false;
  const kept = () => ({ ...filters, cursor: params.cursor });
  const hooks = {
    // A resend's new delivery goes at the top of the log; the delivery being read stays open.
    added: (d) => {
      add(d, true);
      startLive();
    },
    opened: (deliveryId) => note(here, { ...kept(), open: deliveryId }),
    closed: (deliveryId) => {
      if (hashParams(["open"]).open === deliveryId) note(here, kept());
    },
  };
  const add = (d, top) => {
    const row = deliveryRow(id, d, hooks);
    rows.set(d.id, row);
    if (top) head.after(row.body);
    return row.body;
  };
  const table = h("table", { class: "log" }, head, page.data.map((d) => add(d, false)));
  const paging = h("div", { class: "actions" },
    params.cursor ? h("a", { class: "button quiet", href: `#/${here}${query(filters)}` }, "Newest") : null,
    page.next_cursor ? h("a", { class: "button", href: `#/${here}${query({ ...filters, cursor: page.next_cursor })}` }, "Older") : null);
  const live = liveNote();
  v.show(
    h("p", { class: "crumbs" }, h("a", { href: "#/webhooks" }, "Webhooks"), " / ",
      h("a", { href: `#/webhooks/${encodeURIComponent(id)}` }, w.url), " / deliveries"),
    h("div", { class: "title-row" }, h("h1", {}, "Delivery log"),
      h("button", { type: "button", class: "quiet", onclick: () => deliveriesView(id, hashParams(LOG_PARAMS)) }, "Refresh")),
    filterForm,
    page.data.length ? table : h("p", { class: "empty" }, filtered ? "No deliveries match." : "No deliveries yet."),
    live, paging);

  // The delivery the address names, opened; from another page, shown above this one's.
  if (params.open) {
    const named = rows.get(params.open);
    if (named) named.open();
    else {
      try {
        const d = await api("GET", `${hook(id)}/deliveries/${encodeURIComponent(params.open)}`);
        if (v.current()) {
          if (!page.data.length) main.querySelector("p.empty")?.replaceWith(table);
          add(d, true).classList.add("linked");
          rows.get(d.id).open();
        }
      } catch (err) {
        if (v.current()) filterForm.after(h("p", { class: "status error", role: "alert" }, `Delivery ${params.open}: ${message(err)}`));
      }
    }
  }

  if (anyPending(page.data)) startLive();

  // While deliveries shown are pending, the page is read again and the rows change in place;
  // on the newest page, deliveries made since are added at the top.
  function startLive() {
    if (polling) return;
    polling = true;
    poll(v, live, async () => {
      const fresh = (await api("GET", listed)).data;
      for (const d of [...fresh].reverse()) {
        if (rows.has(d.id)) rows.get(d.id).update(d);
        else if (!params.cursor) add(d, true);
      }
      // A pending row the page no longer holds (delivered under a status filter, pushed to
      // the next page, or added by a resend or the address) is read on its own, a few a tick.
      const seen = new Set(fresh.map((d) => d.id));
      const missing = [...rows.values()].filter((row) => !seen.has(row.current().id) && row.current().status === "PENDING");
      for (const row of missing.slice(0, 3)) {
        row.update(await api("GET", `${hook(id)}/deliveries/${encodeURIComponent(row.current().id)}`));
      }
      return anyPending([...rows.values()].map((row) => row.current()));
    }).finally(() => {
      polling = false;
    });
  }
}

/**
 * A delivery's row and its detail (opened on demand). `update` shows a newer state of the same
 * delivery in place, and reads the detail again when it is open and the delivery moved on.
 */
function deliveryRow(webhookId, d, { added, opened, closed }) {
  let current = d;
  const detail = h("tr", { class: "detail", hidden: true }, h("td", { colspan: 7 }));
  const what = `delivery ${d.id} (${d.event_type})`;
  const open = h("button", { type: "button", class: "quiet", "aria-expanded": "false", "aria-label": `Open ${what}` }, "Open");
  const toggle = async (opening) => {
    detail.hidden = !opening;
    open.setAttribute("aria-expanded", String(opening));
    open.textContent = opening ? "Close" : "Open";
    open.setAttribute("aria-label", `${opening ? "Close" : "Open"} ${what}`);
    if (opening) {
      opened?.(d.id);
      await fillDetail(webhookId, current, detail.firstChild, added);
    } else {
      closed?.(d.id);
    }
  };
  open.addEventListener("click", () => toggle(detail.hidden));
  const cells = {
    status: h("td", { "data-label": "Status" }),
    attempts: h("td", { "data-label": "Attempts" }),
    answer: h("td", { "data-label": "Last answer" }),
  };
  const row = h("tr", {},
    h("td", { "data-label": "Created" }, stamp(d.created_at, { ago: true })),
    h("td", { "data-label": "Event" }, d.event_type),
    h("td", { "data-label": "Kind" }, d.kind),
    cells.status, cells.attempts, cells.answer,
    h("td", {}, open));
  const draw = () => {
    row.className = `delivery ${current.status.toLowerCase()}`;
    replace(cells.status, h("span", { class: `pill ${current.status.toLowerCase()}` }, current.status));
    cells.attempts.textContent = String(current.attempts);
    replace(cells.answer, lastAnswer(current.last_status_code, current.last_error));
  };
  draw();
  const update = (next) => {
    if (next.updated_at === current.updated_at && next.status === current.status && next.attempts === current.attempts) return;
    current = next;
    draw();
    if (!detail.hidden) fillDetail(webhookId, current, detail.firstChild, added, { again: true });
  };
  return { body: h("tbody", {}, row, detail), update, open: () => toggle(true), current: () => current };
}

/**
 * Where a pending delivery stands, in words: the next attempt ahead, or, when it is already due,
 * that it waits its turn (deliveries about one subject go one at a time, in order, and a webhook
 * has a limited number in flight), so a due time in the past does not read as lost.
 */
function pendingNote(d) {
  if (d.status !== "PENDING") return null;
  const due = d.next_attempt_at ? new Date(d.next_attempt_at).getTime() : Date.now();
  if (due > Date.now() + 1000) {
    return ["Next attempt ", stamp(d.next_attempt_at), ` (${relative(d.next_attempt_at)}).`];
  }
  return [
    d.attempts ? "Due again since " : "Due since ", stamp(d.next_attempt_at), ": waiting its turn. Deliveries about the same subject are sent one at a time, in order, ",
    "so it goes once the earlier ones are done, and each webhook has a few deliveries in flight at most.",
  ];
}

/**
 * Shows delivery `d`'s detail in `cell`. Read `again` (it moved on while open), what is shown
 * stays until the answer, the request disclosures left open stay open and the focus stays on
 * the control that had it; of two reads in flight, only the later one's answer is shown.
 */
async function fillDetail(webhookId, d, cell, added, { again = false } = {}) {
  const ticket = (readings.get(cell) ?? 0) + 1;
  readings.set(cell, ticket);
  if (!again) replace(cell, h("p", { class: "loading" }, "Loading…"));
  let full;
  try {
    full = await api("GET", `${hook(webhookId)}/deliveries/${encodeURIComponent(d.id)}`);
  } catch (err) {
    if (readings.get(cell) === ticket && !again) replace(cell, h("p", { class: "status error", role: "alert" }, message(err)));
    return;
  }
  if (readings.get(cell) !== ticket) return;
  const wasOpen = new Set([...cell.querySelectorAll("details.request[open]")].map((el) => el.dataset.attempt));
  const focused = cell.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
  const resend = action("Resend", async (out) => {
    const answer = await api("POST", `${hook(webhookId)}/deliveries/${encodeURIComponent(d.id)}/resend`);
    say(out, `Queued again as delivery ${answer.delivery.id}, now at the top of the log.`, true);
    added(answer.delivery);
  }, { name: `Resend delivery ${d.id}` });
  const attempts = full.attempts_log?.length
    ? h("table", { class: "attempts" },
      h("thead", {}, h("tr", {}, ["#", "Started", "Duration", "Answer", "Error", "Response body"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, full.attempts_log.map((a) => h("tr", {},
        h("td", { "data-label": "#" }, String(a.number)),
        h("td", { "data-label": "Started" }, stamp(a.started_at)),
        h("td", { "data-label": "Duration" }, `${a.duration_ms} ms`),
        h("td", { "data-label": "Answer" }, a.status_code ? `HTTP ${a.status_code}` : "—"),
        h("td", { "data-label": "Error" }, a.error ?? "—"),
        h("td", { "data-label": "Response body" }, a.response_body ? h("code", {}, a.response_body) : "—")))))
    : h("p", { class: "empty" }, full.status === "PENDING" ? "No attempt yet." : "No attempt was made.");
  const payload = JSON.stringify(full.payload, null, 2);
  // Each attempt's request as sent: its headers (the signature of that attempt; never the
  // secret) and the body, the payload's exact bytes.
  const raw = rawPayload(full) ?? JSON.stringify(full.payload);
  const requests = (full.attempts_log ?? []).filter((a) => a.request_headers).map((a) => {
    const text = `${Object.entries(a.request_headers).map(([name, value]) => `${name}: ${value}`).join("\n")}\n\n${raw}`;
    return h("details", { class: "request", "data-attempt": String(a.number), open: wasOpen.has(String(a.number)) },
      h("summary", {}, `Request of attempt ${a.number} of delivery ${full.id} as sent`),
      h("div", { class: "title-row" }, h("span", { class: "hint" }, "Headers, a blank line, then the body"),
        copyButton(text, "Copy request", `Copy request of attempt ${a.number} of delivery ${full.id}`)),
      h("pre", { class: "payload wrapped", tabindex: "0" }, text));
  });
  replace(cell,
    h("div", { class: "delivery-detail" },
      h("p", {}, `Delivery #${full.id} `, copyButton(full.id, "Copy id", `Copy id of delivery ${full.id}`),
        ", event ", h("code", {}, full.event_id), " ",
        copyButton(full.event_id, "Copy event id", `Copy event id of delivery ${full.id}`)),
      full.status === "PENDING" ? h("p", { class: "pending-note" }, pendingNote(full)) : null,
      h("h3", {}, "Attempts"), attempts, requests,
      h("div", { class: "title-row" }, h("h3", {}, "Payload"),
        copyButton(payload, "Copy payload", `Copy payload of delivery ${full.id}`)),
      h("pre", { class: "payload", tabindex: "0" }, payload),
      h("div", { class: "actions" }, resend.button), resend.out));
  if (focused) cell.querySelector(`[aria-label="${CSS.escape(focused)}"]`)?.focus();
}

/** The latest read of each detail cell (`fillDetail`). */
const readings = new WeakMap();

// ---------------------------------------------------------------------------------------------
// Events (the catch-up feed, read backwards: newest first)

const FEED = "/api/integrations/automation/events";
const PAGE = 50;

/**
 * The address's `params`: `types` (the filter), `before` (where the page starts: `latest`, or the
 * previous page's `next_cursor`) and `open` (the event shown open). `newer` (not in the address):
 * the `before` of the pages seen on the way here, for *Newer*.
 */
async function eventsView(params = {}) {
  const v = view();
  v.loading("events");
  const before = params.before ?? "latest";
  const newer = params.newer ?? [];
  let page;
  let types;
  try {
    [types, page] = await Promise.all([
      eventTypes(),
      api("GET", `${FEED}${query({ before, types: params.types, limit: PAGE })}`),
    ]);
  } catch (err) {
    v.failure(err, () => eventsView(params));
    return;
  }
  const typeFilter = h("select", {}, h("option", { value: "" }, "all types"),
    types.filter((t) => t.type !== "WEBHOOK_TEST").map((t) => h("option", { value: t.type }, t.type)));
  typeFilter.value = params.types ?? "";
  const toolbar = h("form", { class: "toolbar", "aria-label": "Filter events" }, field("Type", typeFilter),
    h("button", { type: "submit" }, "Apply"));
  toolbar.addEventListener("submit", (event) => {
    event.preventDefault();
    go(`#/events${query({ types: typeFilter.value })}`);
  });
  // Another page of the same filter: noted in the address, shown in place.
  const turn = (at, stack) => {
    note("events", { types: params.types, before: at === "latest" ? undefined : at });
    eventsView({ types: params.types, before: at, newer: stack });
  };
  const opened = new Map();
  const list = page.data.length
    ? h("ul", { class: "events-list" }, page.data.map((e) => {
      const fate = h("div", { class: "event-deliveries" });
      const details = h("details", {},
        h("summary", {}, h("span", { class: "type" }, e.type), " ", h("span", { class: "time" }, stamp(e.created_at, { ago: true })),
          " ", h("span", { class: "id" }, e.id)),
        h("div", { class: "title-row" }, h("h3", {}, "Payload"),
          copyButton(e.id, "Copy id", `Copy id of event ${e.id}`)),
        h("pre", { class: "payload", tabindex: "0" }, JSON.stringify(e.payload, null, 2)),
        fate);
      // Its deliveries to the caller's webhooks, read each time it is opened; the address
      // names the event open.
      details.addEventListener("toggle", () => {
        const at = { types: params.types, before: params.before };
        if (details.open) {
          note("events", { ...at, open: e.id });
          eventDeliveries(v, e, fate, () => details.open && details.isConnected);
        } else if (hashParams(["open"]).open === e.id) {
          note("events", at);
        }
      });
      opened.set(e.id, details);
      return h("li", { class: "card event" }, details);
    }))
    : h("p", { class: "empty" }, newer.length ? "No older events." : "No events in the retained period.");
  const pages = h("div", { class: "actions" },
    newer.length
      ? h("button", { type: "button", class: "quiet", onclick: () => turn(newer[newer.length - 1], newer.slice(0, -1)) }, "Newer")
      : null,
    page.data.length === PAGE
      ? h("button", { type: "button", onclick: () => turn(page.next_cursor, [...newer, before]) }, "Older")
      : null);
  v.show(
    h("div", { class: "title-row" }, h("h1", {}, "Events"),
      h("button", { type: "button", class: "quiet", onclick: () => go(`#/events${query({ types: params.types })}`) }, "Newest")),
    h("p", { class: "hint" }, `The workspace's events, newest first, ${PAGE} to a page (the catch-up feed read backwards).`),
    toolbar, list, pages);
  if (params.open) {
    const details = opened.get(params.open);
    if (details) {
      details.open = true;
      details.scrollIntoView({ block: "nearest" });
    } else {
      toolbar.after(h("p", { class: "status error", role: "alert" }, `Event ${params.open} is not on this page (it may be older, or filtered out).`));
    }
  }
}

/**
 * Fills `box` with event `e`'s deliveries to the caller's webhooks, each with *Resend*; read
 * again while some are pending and the event stays open (`isOpen`).
 */
async function eventDeliveries(v, e, box, isOpen) {
  const read = async () => (await api("GET", `${FEED}/${encodeURIComponent(e.id)}/deliveries`)).data;
  if (!box.childElementCount) replace(box, h("p", { class: "loading" }, "Loading its deliveries…"));
  let found;
  try {
    found = await read();
  } catch (err) {
    replace(box, h("p", { class: "status error", role: "alert" }, message(err)));
    return;
  }
  const live = liveNote();
  const table = h("div");
  // Redrawn only when the list changed; a resend's outcome and the focus outlive a redraw.
  const outcomes = new Map();
  let shown = null;
  const draw = (list) => {
    const text = JSON.stringify(list);
    if (text === shown) return;
    shown = text;
    const focused = table.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
    drawRows(list);
    if (focused) table.querySelector(`[aria-label="${CSS.escape(focused)}"]`)?.focus();
  };
  const drawRows = (list) => replace(table,
    h("table", { class: "log" },
      h("thead", {}, h("tr", {}, ["Webhook", "Kind", "Status", "Attempts", "Last answer", ""].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, list.map((d) => {
        const resend = action("Resend", async (out) => {
          const answer = await api("POST", `${hook(d.webhook_id)}/deliveries/${encodeURIComponent(d.id)}/resend`);
          outcomes.set(d.id, `Queued again as delivery ${answer.delivery.id}.`);
          say(out, outcomes.get(d.id), true);
          following();
        }, { name: `Resend delivery ${d.id} to ${d.webhook_id}` });
        if (outcomes.has(d.id)) say(resend.out, outcomes.get(d.id), true);
        return h("tr", { class: `delivery ${d.status.toLowerCase()}` },
          h("td", { "data-label": "Webhook" }, h("a", {
            href: `#/webhooks/${encodeURIComponent(d.webhook_id)}/deliveries${query({ event_id: e.id, open: d.id })}`,
          }, d.webhook_id)),
          h("td", { "data-label": "Kind" }, d.kind),
          h("td", { "data-label": "Status" }, h("span", { class: `pill ${d.status.toLowerCase()}` }, d.status)),
          h("td", { "data-label": "Attempts" }, String(d.attempts)),
          h("td", { "data-label": "Last answer" }, lastAnswer(d.last_status_code, d.last_error)),
          h("td", {}, resend.button, resend.out));
      }))));
  if (!found.length) {
    replace(box, h("p", { class: "empty" }, "None of your webhooks took this event."));
    return;
  }
  draw(found);
  replace(box, h("h3", {}, "Deliveries to your webhooks"), table, live);
  let polling = false;
  // A resend's delivery is pending: the list follows it until it is final.
  const following = () => {
    if (polling) return;
    polling = true;
    poll(v, live, async () => {
      if (!isOpen()) return false;
      const again = await read();
      draw(again);
      return anyPending(again);
    }).finally(() => {
      polling = false;
    });
  };
  if (anyPending(found)) following();
}

// ---------------------------------------------------------------------------------------------
// Set up

async function setupView() {
  const v = view();
  v.loading("set-up");
  const snippet = (name) => fetch(`/console/assets/snippets/${name}`, { cache: "no-store" })
    .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`Could not load ${name}`))));
  let js;
  let py;
  let rs;
  try {
    [js, py, rs] = await Promise.all([snippet("verify.js"), snippet("verify.py"), snippet("verify.rs")]);
  } catch (err) {
    v.failure(err, setupView);
    return;
  }
  const curl = [
    `curl -X POST ${location.origin}${HOOKS}/subscribe \\`,
    '  -H "Authorization: Bearer $TIMETRACK_API_KEY" \\',
    '  -H "Content-Type: application/json" \\',
    `  -d '{"url": "https://example.com/hooks/timetrack", "events": ["TIMER_STARTED", "TIMER_STOPPED"]}'`,
  ].join("\n");
  const block = (title, code) => h("section", { class: "card snippet" },
    h("div", { class: "title-row" }, h("h2", {}, title), copyButton(code, "Copy", `Copy: ${title}`)),
    h("pre", { tabindex: "0" }, h("code", {}, code)));
  v.show(
    h("h1", {}, "Set up"),
    h("dl", { class: "facts card" },
      h("dt", {}, "Workspace"), h("dd", {}, `${me.workspace?.name ?? ""} `, h("code", {}, me.workspace?.id ?? "")),
      h("dt", {}, "Signed in as"), h("dd", {}, `${me.user?.name ?? ""} (${me.user?.email ?? ""})`),
      h("dt", {}, "API base"), h("dd", {}, h("code", {}, location.origin))),
    block("Subscribe with curl", curl),
    h("p", {}, "Every delivery is signed the Standard Webhooks way: ",
      h("code", {}, "webhook-signature"), " is ", h("code", {}, "v1,"), " and the base64 HMAC-SHA256 of ",
      h("code", {}, "{webhook-id}.{webhook-timestamp}.{body}"), ", keyed with the secret after ",
      h("code", {}, "whsec_"), ". During a rotation it carries two signatures; either secret verifies."),
    block("Verify in Node.js", js),
    block("Verify in Python", py),
    block("Verify in Rust", rs));
}

// ---------------------------------------------------------------------------------------------
// Routing

function highlight(section) {
  for (const link of nav.querySelectorAll("a")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function route() {
  if (!session.key) {
    signInView();
    return;
  }
  if (!me) {
    const v = view();
    try {
      me = await api("GET", "/api/me");
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        session.forget();
        signInView("Your key is no longer accepted; sign in again.");
      } else {
        v.failure(err, route);
      }
      return;
    }
  }
  signedIn();
  const parts = location.hash.replace(/^#\/?/, "").split("?")[0].split("/").map(decodeURIComponent);
  const [section, id, sub] = parts;
  highlight(["events", "reports", "invoices", "setup"].includes(section) ? section : "webhooks");
  // Invoices are for owners and admins: a member is not offered them.
  const invoicesLink = nav.querySelector("a[data-section='invoices']");
  if (invoicesLink) invoicesLink.hidden = me?.role === "member";
  if (section === "events") await eventsView(hashParams(["types", "before", "open"]));
  else if (section === "reports") {
    const v = view();
    v.loading("the report");
    await reportsView(v, reportParams(location.hash));
  }
  else if (section === "invoices") {
    const v = view();
    v.loading(id ? "the invoice" : "invoices");
    if (id === "new") await newInvoiceView(v);
    else if (id) await invoiceView(v, id);
    else await invoicesView(v, invoiceParams(location.hash));
  }
  else if (section === "setup") await setupView();
  else if (section === "new") await newWebhookView();
  else if (section === "webhooks" && id && sub === "deliveries") await deliveriesView(id, hashParams(LOG_PARAMS));
  else if (section === "webhooks" && id) await webhookView(id);
  else await webhooksView();
}

window.addEventListener("hashchange", route);
route();
