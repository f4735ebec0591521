// Drives the console in Chromium through the proof list of the console spec, against the real
// binary. Run by the `console` test of e2e/deliveries/console.rs, which starts the server and an HTTPS receiver and
// answers this script's `ASK` lines (receiver control) on stdin.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const { chromium } = require("playwright-core");
const { Webhook } = require("standardwebhooks");

const BASE = process.env.CONSOLE_BASE;
const KEY = process.env.CONSOLE_KEY;
const RECEIVER = process.env.CONSOLE_RECEIVER;
const SHOTS = process.env.CONSOLE_SHOTS;
const CHROMIUM = process.env.CONSOLE_CHROMIUM;
const XSS = "<img src=x onerror=alert(1)>";
const ORIGIN = new URL(BASE).origin;

// ---- talking to the test (receiver control) -------------------------------------------------
const lines = readline.createInterface({ input: process.stdin });
const replies = [];
let waiting = null;
lines.on("line", (line) => {
  const value = JSON.parse(line);
  if (waiting) {
    const resolve = waiting;
    waiting = null;
    resolve(value);
  } else {
    replies.push(value);
  }
});
function ask(request) {
  return new Promise((resolve) => {
    waiting = resolve;
    process.stdout.write(`ASK ${JSON.stringify(request)}\n`);
  });
}

// ---- checks ---------------------------------------------------------------------------------
let checks = 0;
function check(condition, what) {
  if (!condition) throw new Error(`FAILED: ${what}`);
  checks += 1;
  console.log(`ok - ${what}`);
}

async function api(method, p, body) {
  const res = await fetch(`${BASE}${p}`, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function verifies(secret, delivery) {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers);
    return true;
  } catch {
    return false;
  }
}

async function until(what, probe, timeoutMs = 20000) {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`FAILED: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

let page = null;

// A datetime-local value (the page's zone, minutes) `hoursAgo` before now, from the clock at run
// time: replay windows are checked against the event retention, so no fixed date may stand here.
async function localInputHoursAgo(hoursAgo) {
  return page.evaluate((ms) => {
    const d = new Date(Date.now() - ms);
    const two = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`;
  }, hoursAgo * 3600 * 1000);
}

(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  // A zone away from UTC, so that local times can be told from stored ones.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: "Europe/Prague" });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: ORIGIN });
  page = await context.newPage();
  const foreign = [];
  context.on("request", (request) => {
    const url = request.url();
    // The browser's own PDF viewer (the invoice's tab) loads its parts from chrome: and
    // chrome-extension: addresses, and the document from a blob: of this page; none leaves the
    // machine.
    const internal = /^(data|blob|chrome|chrome-extension):/.test(url);
    if (!url.startsWith(`${ORIGIN}/`) && !internal) foreign.push(url);
  });
  const dialogs = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    dialog.dismiss().catch(() => {});
  });
  const problems = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  page.on("console", (msg) => {
    // A refused key's 401 is logged by the browser as a failed resource; anything else (a CSP
    // violation, a script error) is a problem.
    if (msg.type() === "error" && !/Failed to load resource/.test(msg.text())) problems.push(msg.text());
  });
  let shot = 0;
  const screenshot = async (name) => {
    shot += 1;
    const file = path.join(SHOTS, `${String(shot).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot ${file}`);
  };
  const labelled = async (view) => {
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll("input, select, textarea, button")]
      .filter((el) => !el.closest("[hidden]"))
      .filter((el) => (el.tagName === "BUTTON"
        ? !el.textContent.trim() && !el.getAttribute("aria-label")
        : el.labels.length === 0 && !el.getAttribute("aria-label")))
      .map((el) => el.outerHTML.slice(0, 80)));
    check(unlabelled.length === 0, `${view}: every control is labelled (${JSON.stringify(unlabelled)})`);
  };
  const uniqueNames = async (view) => {
    const names = await page.evaluate(() => [...document.querySelectorAll("main button")]
      .filter((el) => !el.closest("[hidden]"))
      .map((el) => (el.getAttribute("aria-label") || el.textContent).trim()));
    const repeated = names.filter((n, i) => names.indexOf(n) !== i);
    check(repeated.length === 0, `${view}: no two buttons share an accessible name (${JSON.stringify([...new Set(repeated)])})`);
  };
  const fitsWidth = async (view) => {
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 391, `${view} fits 390 px without sideways scrolling (${width} px)`);
  };

  // 1. Sign-in, the headers, a refused key, then the right one, by keyboard.
  const response = await page.goto(`${BASE}/console`);
  const headers = response.headers();
  const csp = headers["content-security-policy"] ?? "";
  check(csp.includes("script-src 'self'") && csp.includes("connect-src 'self'")
    && csp.includes("frame-ancestors 'none'") && !csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"),
  `the page has a strict Content-Security-Policy (${csp})`);
  check(headers["x-content-type-options"] === "nosniff", "X-Content-Type-Options: nosniff");
  check(headers["referrer-policy"] === "no-referrer", "Referrer-Policy: no-referrer");
  await page.getByLabel("API key").waitFor();
  check(await page.locator("#nav").isHidden() && await page.getByRole("button", { name: "Sign out" }).isHidden(),
    "signed out, the page shows no navigation and no Sign out");
  check(await page.evaluate(() => document.activeElement?.name === "key"), "the key field has the focus on arrival");
  await page.keyboard.type("tt_not_a_key");
  await page.keyboard.press("Enter");
  await page.getByRole("alert").filter({ hasText: "not accepted" }).waitFor();
  check(await page.evaluate(() => sessionStorage.length === 0), "a refused key is not kept");
  await labelled("sign-in");
  await screenshot("sign-in-refused");
  await page.getByLabel("API key").fill(KEY);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Webhooks" }).waitFor();
  check(await page.evaluate((key) => sessionStorage.getItem("timetrack.apiKey") === key && localStorage.length === 0, KEY),
    "the key is kept in sessionStorage only");
  check((await context.cookies()).length === 0, "no cookie is set");
  await screenshot("webhooks-empty");

  // 2. Subscribe through the page; the secret is shown once; the description is an XSS string.
  // (A client made before, for the filter pickers later: its event reaches no webhook.)
  const picked = (await api("POST", "/api/clients", { name: "Picker Client Co" })).body;
  await page.getByRole("link", { name: "Subscribe a webhook" }).click();
  await page.getByLabel("URL (HTTPS)").fill(`${RECEIVER}/hook`);
  await page.locator("#ev-CLIENT_CREATED").check();
  await page.getByLabel("Description").fill(XSS);
  await labelled("subscribe");
  await page.getByRole("button", { name: "Subscribe" }).click();
  const firstSecret = (await page.locator(".secret-value").textContent()).trim();
  check(firstSecret.startsWith("whsec_"), "subscribing shows the secret once");
  await screenshot("subscribed");
  await page.getByRole("link", { name: "Back to the list" }).click();
  const card = page.locator(".hook").first();
  await card.waitFor();
  check((await card.locator(".badge").textContent()) === "unknown", "the new webhook appears with its health (unknown)");
  check((await card.locator(".description").textContent()) === XSS, "the XSS description shows literally");
  check(await page.locator("main img").count() === 0, "... and makes no element");
  await screenshot("webhooks-list");

  // 3. Send test reaches the receiver; the log shows it delivered with its attempt.
  await card.locator("a.url").click();
  await page.getByRole("button", { name: "Send test" }).waitFor();
  const webhookId = decodeURIComponent(page.url().split("#/webhooks/")[1]);
  await labelled("webhook");
  await page.getByRole("button", { name: "Send test" }).click();
  await page.getByText("Test delivered (HTTP 200).").waitFor({ timeout: 15000 });
  let received = await ask({ received: "/hook" });
  check(received.length === 1 && received[0].headers["x-webhook-event"] === "WEBHOOK_TEST", "the test reached the HTTPS receiver");
  check(verifies(firstSecret, received[0]), "... signed with the secret the page showed");
  await screenshot("webhook-test-sent");
  await page.getByRole("link", { name: "See the delivery log" }).click();
  const testRow = page.locator("tr.delivery").first();
  await testRow.waitFor();
  await page.locator(".attempts tbody tr").first().waitFor();
  check(/[?&]open=/.test(page.url()) && await testRow.getByRole("button", { name: /^Close/ }).getAttribute("aria-expanded") === "true",
    `the test's link opens the log with the test delivery open, named in the address (${page.url().split("#")[1]})`);
  await page.reload();
  await page.locator(".attempts tbody tr").first().waitFor();
  check(await page.locator("tr.delivery").first().getByRole("button", { name: /^Close/ }).count() === 1,
    "... and a reload shows it open again");
  await testRow.getByRole("button", { name: /^Close/ }).click();
  check(!/[?&]open=/.test(page.url()), "closing it takes it out of the address");
  check((await testRow.textContent()).includes("DELIVERED") && (await testRow.textContent()).includes("test"),
    "the test delivery shows as DELIVERED in the log");
  const created = testRow.locator("time").first();
  check(/ago|just now/.test(await created.textContent()) && /GMT\+1/.test(await created.getAttribute("title"))
    && / UTC\)$/.test(await created.getAttribute("title")),
  `the log says when relatively, with the local time and UTC on hover (${await created.getAttribute("title")})`);
  await testRow.getByRole("button", { name: "Open" }).click();
  const attempt = page.locator(".attempts tbody tr").first();
  await attempt.waitFor();
  check((await attempt.textContent()).includes("HTTP 200"), "... with its attempt (HTTP 200)");
  check((await attempt.locator("time").textContent()).includes("GMT+1"), "an attempt's start is in the browser's zone");
  // The request as sent: the headers the receiver got, the signature included, and the body.
  await page.getByText(/^Request of attempt 1 of delivery \d+ as sent$/).click();
  const sent = await page.locator("details.request[open] pre").textContent();
  const [sentHead, sentBody] = [sent.slice(0, sent.indexOf("\n\n")), sent.slice(sent.indexOf("\n\n") + 2)];
  const sentHeaders = Object.fromEntries(sentHead.split("\n").map((line) => [line.slice(0, line.indexOf(": ")), line.slice(line.indexOf(": ") + 2)]));
  const arrived = received[0];
  check(["webhook-id", "webhook-timestamp", "webhook-signature", "x-webhook-event", "content-type", "user-agent"]
    .every((name) => sentHeaders[name] === arrived.headers[name]) && sentBody === arrived.body,
  "a delivery shows each attempt's request as sent: the headers and signature the receiver got, and its exact body");
  check(!sent.includes(firstSecret) && !sent.includes(firstSecret.slice(6)), "... and never the secret");
  await page.getByRole("button", { name: /^Copy event id of delivery/ }).click();
  check(await page.evaluate(() => navigator.clipboard.readText()) === arrived.headers["webhook-id"],
    "the event id's copy button puts the id on the clipboard");
  await labelled("deliveries");
  await uniqueNames("deliveries");
  await screenshot("delivery-log-test");

  // 4. The receiver answers 500: the webhook shows as failing.
  await ask({ respond: { path: "/hook", status: 500 } });
  const made = await api("POST", "/api/clients", { name: XSS });
  check(made.status === 201, "a client named with the XSS string is created");
  await page.goto(`${BASE}/console#/webhooks/${encodeURIComponent(webhookId)}`);
  await until("the failing badge", async () => {
    await page.reload();
    await page.locator(".title-row .badge").waitFor();
    return (await page.locator(".title-row .badge").textContent()) === "failing";
  });
  check(true, "a receiver answering 500 shows the webhook as failing");
  check(await page.locator(".chart rect.failed[height]:not([height='0'])").count() > 0, "... and the chart draws the failed attempt");
  const axis = await page.evaluate(() => [...document.querySelectorAll("svg.chart")].map((svg) => ({
    labels: [...svg.querySelectorAll("text.axis")].map((t) => t.textContent),
    inside: [...svg.querySelectorAll("text.axis")].every((t) => t.getBBox().x >= 0),
  })));
  const stats = (await api("GET", `/api/integrations/automation/webhooks/${webhookId}/stats`)).body.buckets;
  const slowest = Math.max(1, ...stats.map((b) => b.p95_ms ?? 0));
  const top = axis[1].labels.find((l) => l.endsWith(" ms"));
  check(axis.every((a) => a.inside) && Number(top.slice(0, -3)) >= slowest,
    `the charts' axis labels are whole and the latency axis reaches the slowest p95 (${top} for ${slowest} ms)`);
  await screenshot("webhook-failing");
  // The view as a person first sees it (the README's picture).
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(SHOTS, "console-webhook.png") });

  // 5. Fixed, then Resend: delivered.
  await ask({ respond: { path: "/hook", status: 200 } });
  await page.getByRole("link", { name: "Delivery log" }).click();
  const failedRow = page.locator("tr.delivery", { hasText: "CLIENT_CREATED" }).first();
  await failedRow.waitFor();
  check((await failedRow.textContent()).includes("HTTP 500"), "the client's delivery shows its 500");
  await failedRow.getByRole("button", { name: "Open" }).click();
  await page.getByRole("button", { name: "Resend" }).waitFor();
  const payload = await page.locator("pre.payload").first().textContent();
  check(payload.includes(JSON.stringify(XSS).slice(1, -1)), "its payload is pretty-printed as text");
  await screenshot("delivery-failed-attempt");
  await page.getByRole("button", { name: "Resend" }).click();
  await page.getByText(/Queued again as/).waitFor();
  check(await page.getByRole("button", { name: /^Resend/ }).isVisible() && await page.locator("tr.delivery", { hasText: "resend" }).count() === 1,
    "a resend adds its delivery to the log and leaves the delivery being read open");
  check(await page.locator(".live").isVisible(), "while the resend is pending the log says it is read again live");
  await until("the resend delivered, with no click", async () => {
    const row = page.locator("tr.delivery", { hasText: "resend" }).first();
    return (await row.textContent()).includes("DELIVERED");
  });
  check(true, "a Resend after the fix turns DELIVERED in the log by itself (live refresh)");
  await screenshot("resend-delivered");

  // 6. Rotate: a new secret, and the next delivery verifies with both.
  await page.goto(`${BASE}/console#/webhooks/${encodeURIComponent(webhookId)}`);
  await page.getByRole("button", { name: "Rotate secret" }).waitFor();
  check((await page.locator(".title-row .badge").textContent()) === "healthy", "the webhook is healthy again");
  // Left empty, the field means the default day, and the page says so before anything happens.
  check((await page.locator(".op .hint[aria-live]").textContent()).includes("for 1 day (86400 s, the default)"),
    "with the validity left empty the page says the old secret keeps signing for 1 day");
  await page.getByRole("button", { name: "Rotate secret…" }).click();
  await page.getByRole("button", { name: "Yes, rotate the secret" }).waitFor();
  check(await page.evaluate(() => document.activeElement?.textContent === "Cancel"), "Rotate asks first, with the focus on Cancel");
  await page.keyboard.press("Escape");
  check(await page.getByRole("button", { name: "Yes, rotate the secret" }).isHidden(), "... and Escape cancels it");
  check((await api("GET", `/api/integrations/automation/webhooks/${webhookId}`)).body.webhook.secret_rotation === null, "... without rotating");
  await page.getByRole("button", { name: "Rotate secret…" }).click();
  await page.getByRole("button", { name: "Yes, rotate the secret" }).click();
  await page.getByText(/previous secret still signs until/).waitFor();
  const newSecret = (await page.locator(".secret-value").textContent()).trim();
  check(newSecret.startsWith("whsec_") && newSecret !== firstSecret, "Rotate secret shows a new secret");
  const rotation = (await api("GET", `/api/integrations/automation/webhooks/${webhookId}`)).body.webhook.secret_rotation;
  const left = (new Date(rotation.previous_expires_at).getTime() - Date.now()) / 1000;
  check(left > 86400 - 300 && left <= 86400, `an empty validity rotated with the default day (${Math.round(left)} s left)`);
  check((await page.locator(".status-fact").count()) === 1
    && (await page.locator(".facts").textContent()).includes("previous secret signs until"),
  "after Rotate the page shows the rotation window without a reload");
  await screenshot("secret-rotated");
  const before = (await ask({ received: "/hook" })).length;
  await page.getByRole("button", { name: "Send test" }).click();
  await page.getByText("Test delivered (HTTP 200).").waitFor({ timeout: 15000 });
  received = await ask({ received: "/hook" });
  const next = received[received.length - 1];
  check(received.length > before && next.headers["webhook-signature"].split(" ").length === 2,
    "the next delivery carries two signatures");
  check(verifies(newSecret, next) && verifies(firstSecret, next), "... and verifies with the new secret and with the old");
  // A test sent as a chosen type: that type's sample, with that type's header.
  await page.getByLabel("Test event type").selectOption("TIMER_STARTED");
  await page.getByRole("button", { name: "Send test" }).click();
  await page.getByText("Test delivered (HTTP 200).").waitFor({ timeout: 15000 });
  received = await ask({ received: "/hook" });
  const typed = received[received.length - 1];
  const catalogSample = (await api("GET", "/api/integrations/automation/event-types")).body.find((t) => t.type === "TIMER_STARTED").sample;
  check(typed.headers["x-webhook-event"] === "TIMER_STARTED" && JSON.stringify(JSON.parse(typed.body)) === JSON.stringify(catalogSample)
    && verifies(newSecret, typed),
  "Send test with a chosen type delivers that type's catalog sample, signed, with that type in X-Webhook-Event");

  // 6b. Pause, a refused replay, Enable: the page always shows the server's state; the API's
  // detail is shown; Enable only where it applies.
  check(await page.getByRole("button", { name: "Enable" }).count() === 0, "an active webhook is not offered Enable");
  await page.getByRole("button", { name: "Pause…" }).click();
  await page.getByRole("button", { name: "Yes, pause it" }).click();
  await page.locator(".title-row .badge", { hasText: "paused" }).waitFor();
  check((await page.locator(".status-fact").textContent()).includes("paused by its owner"), "a paused webhook says why it is disabled");
  check((await api("GET", `/api/integrations/automation/webhooks/${webhookId}`)).body.webhook.disabled_reason === "manual", "... as the API does");
  const pausedAt = await page.getByLabel(/^Replay what it missed since/).inputValue();
  check(pausedAt !== "", `Enable offers to replay from the pause (${pausedAt})`);
  // A day ago: inside the retention, so the refusal is the disabled webhook's.
  await page.getByLabel(/^Replay from/).fill(await localInputHoursAgo(24));
  await page.getByRole("button", { name: "Replay" }).click();
  await page.getByText("Webhook is disabled").waitFor();
  await screenshot("webhook-paused");
  await page.getByRole("button", { name: "Enable" }).click();
  await page.getByRole("button", { name: "Pause…" }).waitFor();
  check(await page.getByText("Webhook is disabled").count() === 0 && (await page.locator(".title-row .badge").textContent()) !== "paused"
    && (await page.locator(".status-fact").textContent()) === "ACTIVE",
  "after Enable the badge, the status and the messages show the webhook active");
  check((await page.locator(".op .status.ok").textContent()).includes("Enabled"), "... with the outcome beside the control");
  // The API's detail beside the control.
  await page.getByLabel(/^Replay from/).fill(await localInputHoursAgo(24));
  await page.getByLabel(/^Until/).fill(await localInputHoursAgo(48));
  await page.getByRole("button", { name: "Replay" }).click();
  await page.getByText("until must be later than since").waitFor();
  check(true, "a refused replay shows the API's detail (until must be later than since)");
  const settingsForm = page.locator("form[aria-label='Settings']");
  await settingsForm.getByLabel("URL (HTTPS)").fill("http://plain.example.com/hook");
  await settingsForm.getByRole("button", { name: "Save changes" }).click();
  await settingsForm.getByText(/http and other schemes are refused/).waitFor();
  check(true, "a refused URL shows the API's detail (http is refused)");
  await settingsForm.getByLabel("URL (HTTPS)").fill(`${RECEIVER}/hook`);
  await settingsForm.getByLabel("Description").fill("Renamed in the page");
  await settingsForm.getByRole("button", { name: "Save changes" }).click();
  await page.locator("p.description", { hasText: "Renamed in the page" }).waitFor();
  check(true, "after Save the page shows the saved description without a reload");
  // Filters are chosen by name, not typed as ids.
  const meNow = (await api("GET", "/api/me")).body;
  const settingsAgain = page.locator("form[aria-label='Settings']");
  await settingsAgain.getByLabel("Find clients").fill("Picker");
  const clientMatch = settingsAgain.getByLabel("Matching clients");
  await until("the client found by name", async () => (await clientMatch.locator("option").allTextContents()).includes("Picker Client Co"));
  await clientMatch.selectOption({ label: "Picker Client Co" });
  await settingsAgain.getByRole("button", { name: "Add to the clients" }).click();
  await settingsAgain.getByLabel("Find members").focus();
  const memberMatch = settingsAgain.getByLabel("Matching members");
  await until("the members listed", async () => (await memberMatch.locator("option").allTextContents()).some((t) => t.includes(meNow.user.email)));
  await memberMatch.selectOption({ value: meNow.user.id });
  await settingsAgain.getByRole("button", { name: "Add to the members" }).click();
  await labelled("webhook with pickers");
  await settingsAgain.getByRole("button", { name: "Save changes" }).click();
  // A member filter does not apply to CLIENT_CREATED: the API's refusal is shown.
  await settingsAgain.getByText(/user_ids does not apply/).waitFor();
  check(true, "a filter the events cannot carry is refused with the API's detail");
  await page.getByRole("button", { name: `Remove ${meNow.user.name} <${meNow.user.email}> from the members` }).click();
  await settingsAgain.getByRole("button", { name: "Save changes" }).click();
  await page.locator("form .status.ok", { hasText: "Saved." }).first().waitFor();
  let filters = (await api("GET", `/api/integrations/automation/webhooks/${webhookId}`)).body.webhook.filters ?? {};
  check(JSON.stringify(filters.client_ids) === JSON.stringify([picked.id]) && !filters.user_ids?.length,
    `the client picker saves the chosen client's id (${JSON.stringify(filters)})`);
  await until("the chosen client named after the redraw", async () =>
    (await page.locator("form[aria-label='Settings'] .chip").allTextContents()).some((t) => t.includes("Picker Client Co")));
  check(true, "... and after the redraw the chosen client shows by name");
  await screenshot("webhook-filters-picked");
  await page.getByRole("button", { name: "Remove Picker Client Co from the clients" }).click();
  await page.locator("form[aria-label='Settings']").getByRole("button", { name: "Save changes" }).click();
  await until("the filters cleared", async () => {
    filters = (await api("GET", `/api/integrations/automation/webhooks/${webhookId}`)).body.webhook.filters ?? {};
    return !filters.client_ids?.length && !filters.user_ids?.length;
  });
  check(true, "removing the chips and saving clears the filters");
  // An unknown webhook: not found, and a way back rather than Try again.
  await page.goto(`${BASE}/console#/webhooks/wh_0000000000000000000000`);
  await page.getByRole("alert").filter({ hasText: "Webhook not found" }).waitFor();
  check(await page.getByRole("button", { name: "Try again" }).count() === 0
    && await page.getByRole("link", { name: "Back to the webhooks" }).count() === 1,
  "Webhook not found offers the way back, not Try again");

  // 7. Events, newest first, payloads as text.
  await page.locator("#nav").getByRole("link", { name: "Events" }).click();
  const newest = page.locator(".event").first();
  await newest.waitFor();
  check((await newest.locator(".type").textContent()) === "CLIENT_CREATED", "the events view shows the newest event first");
  await newest.locator("summary").click();
  check((await newest.locator("pre").textContent()).includes(XSS), "the XSS client name shows literally in the payload");
  const fate = newest.locator(".event-deliveries table tbody tr", { hasText: webhookId });
  await fate.first().waitFor();
  check(await fate.count() >= 2 && (await fate.first().textContent()).includes("DELIVERED")
    && await newest.getByRole("button", { name: /^Resend delivery/ }).count() >= 2,
  `an opened event lists its deliveries to the webhook (the resend delivered first), each with Resend (${await fate.count()})`);
  check(await page.locator("main img").count() === 0, "... and makes no element");
  await labelled("events");
  await screenshot("events");
  const openedEvent = await newest.locator(".id").textContent();
  check(page.url().includes(`open=${openedEvent}`), "an opened event is named in the address");
  await page.reload();
  await page.locator(".event details[open] .event-deliveries table").waitFor();
  check((await page.locator(".event details[open] .id").textContent()) === openedEvent, "... and a reload shows it open with its deliveries");
  await page.locator(".event details[open] .event-deliveries a").first().click();
  await page.locator(".attempts tbody tr, .delivery-detail .empty").first().waitFor();
  check(page.url().includes(`event_id=${openedEvent}`) && await page.getByRole("searchbox", { name: "Event id", exact: true }).inputValue() === openedEvent
    && (await page.locator("tr.delivery").count()) >= 2,
  "an event's delivery links to the webhook's log searched by that event, with the delivery open");

  // 7b. A delivery held behind an earlier one of its subject says that it waits.
  check((await api("PATCH", `/api/integrations/automation/webhooks/${webhookId}`, { events: ["CLIENT_CREATED", "CLIENT_UPDATED"] })).status === 200,
    "the webhook also takes CLIENT_UPDATED");
  await ask({ respond: { path: "/hook", status: 500 } });
  const held = (await api("POST", "/api/clients", { name: "Held Co" })).body;
  await until("the creation's first attempt", async () => {
    const log = (await api("GET", `/api/integrations/automation/webhooks/${webhookId}/deliveries?event_type=CLIENT_CREATED`)).body.data;
    return log[0]?.attempts === 1;
  });
  check((await api("PATCH", `/api/clients/${held.id}`, { name: "Held Co Ltd" })).status === 200, "the client is renamed while its creation waits for a retry");
  await ask({ respond: { path: "/hook", status: 200 } });
  await page.goto(`${BASE}/console#/webhooks/${encodeURIComponent(webhookId)}/deliveries`);
  const updatedRow = page.locator("tr.delivery", { hasText: "CLIENT_UPDATED" }).first();
  await updatedRow.waitFor();
  await updatedRow.getByRole("button", { name: /^Open/ }).click();
  const note = page.locator(".pending-note").first();
  await note.waitFor();
  check((await note.textContent()).includes("waiting its turn"), `a held delivery says it waits its turn (${await note.textContent()})`);
  await screenshot("delivery-held");
  await updatedRow.getByRole("button", { name: /^Close/ }).click();
  const retryRow = page.locator("tr.delivery", { hasText: "CLIENT_CREATED" }).first();
  await retryRow.getByRole("button", { name: /^Open/ }).click();
  await page.locator(".pending-note", { hasText: "Next attempt" }).waitFor();
  check(true, "a delivery waiting for its retry says when, ahead");
  // While the retry is pending the log is read again, but not while the tab is hidden.
  let logReads = 0;
  const countReads = (request) => {
    if (/\/deliveries(\?|$)/.test(request.url())) logReads += 1;
  };
  page.on("request", countReads);
  await page.evaluate(() => {
    Object.defineProperty(document, "hidden", { configurable: true, get: () => true });
    document.dispatchEvent(new Event("visibilitychange"));
  });
  logReads = 0;
  await page.waitForTimeout(11000);
  const whileHidden = logReads;
  await page.evaluate(() => {
    delete document.hidden;
    document.dispatchEvent(new Event("visibilitychange"));
  });
  await until("the log read again once the tab shows", async () => logReads > whileHidden, 8000);
  page.off("request", countReads);
  check(whileHidden === 0, `a hidden tab reads nothing (${whileHidden} reads in 11 s), and reads again when shown`);
  // Search by entity: the held client's two deliveries, kept in the address.
  await page.getByRole("searchbox", { name: "Entity id", exact: true }).fill(held.id);
  await page.getByRole("button", { name: "Apply" }).click();
  await until("the log searched by entity", async () => page.url().includes(`entity_id=${held.id}`)
    && (await page.locator("tr.delivery").count()) === 2);
  const aboutHeld = await page.locator("tr.delivery").allTextContents();
  check(aboutHeld.some((t) => t.includes("CLIENT_CREATED")) && aboutHeld.some((t) => t.includes("CLIENT_UPDATED")),
    "searching the log by entity id shows that client's deliveries only");
  await page.reload();
  await page.locator("tr.delivery").first().waitFor();
  check(await page.getByRole("searchbox", { name: "Entity id", exact: true }).inputValue() === held.id && (await page.locator("tr.delivery").count()) === 2,
    "... and the search survives a reload (it is in the address)");
  await screenshot("delivery-log-searched");
  await page.getByRole("link", { name: "Clear filters" }).click();
  await until("the whole log again", async () => (await page.locator("tr.delivery").count()) > 2);
  // A read refused for the rate limit: the log stays and is read again after Retry-After.
  let refusedOnce = false;
  await page.route(/\/deliveries(\?|$)/, async (route) => {
    if (refusedOnce) return route.continue();
    refusedOnce = true;
    return route.fulfill({ status: 429, headers: { "Retry-After": "1", "Content-Type": "application/json" }, body: JSON.stringify({ error: "Too many requests" }) });
  });
  await page.getByRole("button", { name: "Refresh" }).click();
  await until("the log read again after the 429", async () => refusedOnce && await page.locator("main[aria-busy]").count() === 0);
  check(await page.locator("tr.delivery").count() > 0 && await page.getByRole("alert").count() === 0,
    "a 429 on a read keeps the log shown and reads it again after Retry-After");
  await page.unroute(/\/deliveries(\?|$)/);

  // 8. Set up: the snippets verify a real delivery.
  await page.locator("#nav").getByRole("link", { name: "Set up" }).click();
  const nodeSnippet = page.locator(".snippet", { hasText: "Verify in Node.js" }).locator("pre");
  await nodeSnippet.waitFor();
  const snippetFile = path.join(SHOTS, "verify-snippet.js");
  fs.writeFileSync(snippetFile, await nodeSnippet.textContent());
  const { verify } = require(snippetFile);
  let snippetOk = true;
  try {
    verify(newSecret, next.body, next.headers);
  } catch {
    snippetOk = false;
  }
  check(snippetOk, "the page's Node.js snippet verifies the last delivery");
  const python = await page.locator(".snippet", { hasText: "Verify in Python" }).locator("pre").textContent();
  const rust = await page.locator(".snippet", { hasText: "Verify in Rust" }).locator("pre").textContent();
  const me = (await api("GET", "/api/me")).body;
  check((await page.locator("main").textContent()).includes(me.workspace.id), "the set-up view shows the workspace id");
  check((await page.locator(".snippet", { hasText: "Subscribe with curl" }).textContent()).includes(`${ORIGIN}/api/integrations/automation/webhooks/subscribe`),
    "... and a curl to subscribe on this server");
  await uniqueNames("set-up");
  await screenshot("setup");

  // 8b. Reports: a month with a rate, two projects (one named with the XSS string) and three
  // entries; the chart, the table with its amounts, the CSV download, and a bad range's detail.
  const currency = (await api("GET", "/api/workspace")).body.currency;
  check((await api("POST", "/api/rates", { kind: "billable", scope: "workspace", currency, hourly_minor: 12000, effective_from: "2026-01-01" })).status === 201,
    `a billable rate of 120.00 ${currency} an hour is added`);
  const alpha = (await api("POST", "/api/projects", { name: "Alpha" })).body;
  const evil = (await api("POST", "/api/projects", { name: XSS })).body;
  for (const [project, start, end] of [
    [alpha, "2026-03-02T09:00:00Z", "2026-03-02T11:30:00Z"],
    [evil, "2026-03-02T13:00:00Z", "2026-03-02T14:00:00Z"],
    [alpha, "2026-03-04T08:00:00Z", "2026-03-04T08:30:00Z"],
  ]) {
    const made = await api("POST", "/api/time-entries", { start, end, project_id: project.id, billable: true });
    check(made.status === 201, `an entry of ${start.slice(0, 10)} is made`);
  }
  await page.locator("#nav").getByRole("link", { name: "Reports" }).click();
  await page.locator("form[aria-label='Report']").waitFor();
  await page.getByLabel("Period").selectOption("custom");
  await page.getByLabel("From", { exact: true }).fill("2026-03-01");
  await page.getByLabel("To", { exact: true }).fill("2026-03-31");
  await page.getByRole("button", { name: "Show" }).click();
  await page.waitForURL(/#\/reports\?from=2026-03-01&to=2026-03-31/);
  const total = page.locator("table.report tfoot tr");
  await total.waitFor();
  check((await total.textContent()).includes("4:00") && (await total.textContent()).includes("480.00"),
    `the total row shows 4:00 hours and 480.00 ${currency} (${await total.textContent()})`);
  const alphaRow = page.locator("table.report tbody tr", { hasText: "Alpha" });
  check((await alphaRow.textContent()).includes("3:00") && (await alphaRow.textContent()).includes("360.00"),
    `Alpha's row shows 3:00 hours and 360.00 ${currency}`);
  check(await page.locator("table.report tbody th", { hasText: XSS }).count() === 1, "the XSS project name shows literally in the table");
  check(await page.locator("main img").count() === 0, "... and makes no element");
  const chart = page.locator("svg.chart.days");
  check((await chart.getAttribute("aria-label")).includes("4:00 in all"), "the chart is labelled with the period's hours");
  check(await chart.locator("rect.bar").count() === 3, "the chart stacks one bar per project and day (3)");
  check((await page.locator(".legend").textContent()).includes("Alpha"), "the legend names the projects");
  await labelled("reports");
  await screenshot("reports");
  const [csvFile] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Download summary CSV" }).click(),
  ]);
  const csvText = fs.readFileSync(await csvFile.path(), "utf8");
  check(csvFile.suggestedFilename() === "timetrack-summary-2026-03-01-2026-03-31.csv", "the summary CSV downloads under a dated name");
  check(csvText.split("\n")[0].startsWith("level,") || csvText.includes("Alpha"), `the CSV holds the report (${csvText.split("\n")[0]})`);
  check(csvText.includes("Alpha") && csvText.includes("360.00"), "... with Alpha's hours and amount");
  await page.goto(`${BASE}/console#/reports?from=2026-03-31&to=2026-03-01&group=project`);
  const rangeProblem = page.locator("form[aria-label='Report'] .status.error");
  await rangeProblem.waitFor();
  check((await rangeProblem.textContent()).includes("to must not be before from"), `a reversed range shows the API's detail (${await rangeProblem.textContent()})`);
  await page.goto(`${BASE}/console#/reports?from=2026-03-01&to=2026-03-31&group=project&then=day`);
  await page.locator("table.report tr.subgroup").first().waitFor();
  check(await page.locator("table.report tr.subgroup", { hasText: "2026-03-04" }).count() === 1, "a second grouping nests days under projects");
  await page.setViewportSize({ width: 390, height: 844 });
  await fitsWidth("reports");
  await screenshot("narrow-reports");
  await page.setViewportSize({ width: 1280, height: 900 });

  // 8c. Invoices: a client with a diacritic-rich name and its March entries; the preview comes
  // first, then the draft, issue, a payment, the PDF in a new tab, and a void with its reason.
  const kun = (await api("POST", "/api/clients", { name: "Žluťoučký kůň s.r.o.", currency, address: "Praha 1" })).body;
  const kunProject = (await api("POST", "/api/projects", { name: "Kůň web", client_id: kun.id })).body;
  for (const [start, end] of [["2026-03-10T09:00:00Z", "2026-03-10T11:00:00Z"], ["2026-03-11T09:00:00Z", "2026-03-11T09:30:00Z"]]) {
    check((await api("POST", "/api/time-entries", { start, end, project_id: kunProject.id, billable: true })).status === 201,
      `a billable entry of ${start.slice(0, 10)} for the client is made`);
  }
  await page.locator("#nav").getByRole("link", { name: "Invoices" }).click();
  await page.getByRole("link", { name: "New invoice" }).click();
  const invoiceForm = page.locator("form[aria-label='New invoice']");
  await invoiceForm.waitFor();
  await page.getByLabel("Client").selectOption(kun.id);
  await invoiceForm.getByLabel("From", { exact: true }).fill("2026-03-01");
  await invoiceForm.getByLabel("To", { exact: true }).fill("2026-03-31");
  await page.getByLabel("Tax (%)").fill("21");
  const createButton = page.getByRole("button", { name: "Create draft" });
  check(await createButton.isDisabled(), "Create waits for a preview");
  await page.getByRole("button", { name: "Preview" }).click();
  const previewTotal = page.locator(".preview table.invoice-lines tfoot tr.strong");
  await previewTotal.waitFor();
  // 2.5 h at 120.00 = 300.00; 21 % tax = 63.00; total 363.00.
  check((await previewTotal.textContent()).includes("363.00"), `the preview shows the total with tax (${await previewTotal.textContent()})`);
  check((await page.locator(".preview tbody tr", { hasText: "Kůň web" }).textContent()).includes("2.500 h"), "the preview's line shows 2.500 h");
  check((await api("GET", "/api/invoices")).body.data.length === 0, "the preview wrote nothing");
  await labelled("new invoice");
  await screenshot("invoice-preview");
  await createButton.click();
  await page.waitForURL(/#\/invoices\/[0-9a-f-]{36}$/);
  await page.getByRole("heading", { name: "Draft invoice" }).waitFor();
  await page.getByRole("button", { name: "Issue" }).click();
  const issuedHeading = page.getByRole("heading", { name: /^Invoice \d{4}-0001$/ });
  await issuedHeading.waitFor();
  check(true, `the draft is issued as ${await issuedHeading.textContent()}`);
  await page.getByLabel(`Amount (${currency})`).fill("100.50");
  await page.getByRole("button", { name: "Record payment" }).click();
  await page.locator(".payments li", { hasText: "100.50" }).waitFor();
  check((await page.locator(".badge.partially_paid").count()) === 1, "a partial payment makes it partially paid");
  check((await page.locator("table.invoice-lines tfoot", { hasText: "Balance due" }).textContent()).includes("262.50"),
    "the balance due is 262.50");
  await labelled("invoice");
  await screenshot("invoice");
  const [pdfTab] = await Promise.all([
    context.waitForEvent("page"),
    page.getByRole("button", { name: "Open PDF" }).click(),
  ]);
  await until("the PDF tab to load", async () => pdfTab.url().startsWith("blob:"));
  check(pdfTab.url().startsWith("blob:"), "Open PDF opens the document in a new tab, the key never in an address");
  await pdfTab.close();
  const pdfBytes = await page.evaluate(async (key) => {
    const id = location.hash.split("/")[2];
    const r = await fetch(`/api/invoices/${id}`, { headers: { Accept: "application/pdf", Authorization: `Bearer ${key}` } });
    return [r.headers.get("content-type"), (await r.text()).slice(0, 5)];
  }, KEY);
  check(pdfBytes[0] === "application/pdf" && pdfBytes[1] === "%PDF-", "the PDF is served as application/pdf");
  await page.getByLabel("Reason").fill("Wrong period");
  await page.getByRole("button", { name: "Void" }).click();
  await page.locator(".badge.void").waitFor();
  check((await page.locator(".facts").textContent()).includes("Wrong period"), "a void shows its reason");
  await page.locator("#nav").getByRole("link", { name: "Invoices" }).click();
  const listed = page.locator("table.invoices tbody tr", { hasText: "Žluťoučký kůň s.r.o." });
  await listed.waitFor();
  check((await listed.textContent()).includes("void"), "the list shows the invoice with its status");
  await page.setViewportSize({ width: 390, height: 844 });
  await fitsWidth("invoices");
  await page.setViewportSize({ width: 1280, height: 900 });

  // 9. At 390 px.
  await page.setViewportSize({ width: 390, height: 844 });
  await fitsWidth("set-up");
  await page.locator("#nav").getByRole("link", { name: "Webhooks" }).click();
  await page.locator(".hook").first().waitFor();
  await fitsWidth("webhooks");
  await screenshot("narrow-webhooks");
  await page.goto(`${BASE}/console#/webhooks/${encodeURIComponent(webhookId)}`);
  await page.getByRole("button", { name: "Send test" }).waitFor();
  await fitsWidth("webhook");
  const axisHeight = await page.evaluate(() => Math.min(...[...document.querySelectorAll("svg.chart text.axis")]
    .map((t) => t.getBoundingClientRect().height)));
  check(axisHeight >= 10, `at 390 px the charts' text is still readable (${axisHeight.toFixed(1)} px high)`);
  await screenshot("narrow-webhook");
  await page.emulateMedia({ colorScheme: "dark" });
  await screenshot("narrow-webhook-dark");
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`${BASE}/console#/webhooks/${encodeURIComponent(webhookId)}`);
  await page.getByRole("button", { name: "Send test" }).waitFor();
  const background = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  check(background === "rgb(17, 21, 29)", `the page follows a dark colour scheme (${background})`);
  await screenshot("webhook-dark");
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: 390, height: 844 });
  // By keyboard this time: the link takes the focus and Enter follows it.
  await page.getByRole("link", { name: "Delivery log" }).focus();
  await page.keyboard.press("Enter");
  await page.locator("tr.delivery").first().waitFor();
  await fitsWidth("deliveries");
  await screenshot("narrow-deliveries");
  await page.setViewportSize({ width: 1280, height: 900 });

  // 10. Delete (asks first), then sign out.
  await page.goto(`${BASE}/console#/webhooks/${encodeURIComponent(webhookId)}`);
  await page.getByRole("button", { name: "Delete…" }).click();
  await page.getByRole("button", { name: "Yes, delete this webhook" }).waitFor();
  check(await page.evaluate(() => document.activeElement?.textContent === "Cancel"), "the delete question has the focus on Cancel");
  await page.keyboard.press("Enter");
  check(await page.getByRole("button", { name: "Yes, delete this webhook" }).isHidden()
    && (await api("GET", `/api/integrations/automation/webhooks/${webhookId}`)).status === 200,
  "Enter there cancels: nothing is deleted");
  await page.getByRole("button", { name: "Delete…" }).click();
  await page.keyboard.press("Escape");
  check(await page.getByRole("button", { name: "Yes, delete this webhook" }).isHidden(), "Escape cancels the delete question");
  await page.getByRole("button", { name: "Delete…" }).click();
  await screenshot("delete-confirm");
  await page.getByRole("button", { name: "Yes, delete this webhook" }).click();
  await page.getByText("No webhooks yet.").waitFor();
  check((await api("GET", `/api/integrations/automation/webhooks/${webhookId}`)).status === 404, "Delete deletes it");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("API key").waitFor();
  check(await page.evaluate(() => sessionStorage.length === 0), "Sign out forgets the key");

  check(foreign.length === 0, `no request to another origin (${JSON.stringify(foreign)})`);
  check(dialogs.length === 0, `no script ran from a value (dialogs: ${JSON.stringify(dialogs)})`);
  check(problems.length === 0, `no script error or CSP violation (${JSON.stringify(problems)})`);
  await browser.close();
  console.log(`RESULT ${JSON.stringify({ checks, secret: newSecret, python, rust })}`);
  process.exit(0);
})().catch(async (error) => {
  console.error(error.stack ?? String(error));
  if (page) {
    const file = path.join(SHOTS, "failure.png");
    await page.screenshot({ path: file, fullPage: true }).catch(() => {});
    console.error(`the page at the failure: ${file}`);
  }
  process.exit(1);
});
