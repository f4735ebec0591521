// The Reports view: a period, one or two groupings, hours per day by project as a stacked bar
// chart, the summary table with amounts per currency, and the CSV downloads. Everything comes
// from GET /api/reports/summary (and /detailed for its CSV); amounts appear only when the API
// sends them (a member without members_see_rates gets none).

import { api, download, query } from "./api.js";
import { field, h, say, status } from "./dom.js";

const KEYS = [
  ["project", "Project"],
  ["client", "Client"],
  ["task", "Task"],
  ["user", "Member"],
  ["tag", "Tag"],
  ["day", "Day"],
  ["week", "Week"],
  ["month", "Month"],
];

/** Eight colours that stay apart for the usual kinds of colour blindness; the ninth project on
 * shares the last one ("others"). */
const COLOURS = ["#2754c5", "#c77700", "#2f9e5b", "#b42318", "#7b3fb5", "#0f8a9d", "#8a6d3b", "#8c95a6"];

/** `YYYY-MM-DD` of a local calendar date. */
const iso = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;

/** The periods offered, each as [from, to] in the browser's calendar. */
function periods(today = new Date()) {
  const y = today.getFullYear();
  const m = today.getMonth();
  const monday = new Date(y, m, today.getDate() - ((today.getDay() + 6) % 7));
  return {
    "this-week": ["This week", iso(monday), iso(new Date(monday.getFullYear(), monday.getMonth(), monday.getDate() + 6))],
    "last-week": ["Last week", iso(new Date(monday.getFullYear(), monday.getMonth(), monday.getDate() - 7)),
      iso(new Date(monday.getFullYear(), monday.getMonth(), monday.getDate() - 1))],
    "this-month": ["This month", iso(new Date(y, m, 1)), iso(new Date(y, m + 1, 0))],
    "last-month": ["Last month", iso(new Date(y, m - 1, 1)), iso(new Date(y, m, 0))],
    "this-year": ["This year", iso(new Date(y, 0, 1)), iso(new Date(y, 11, 31))],
  };
}

/** Seconds as hours and minutes: `12:05`. */
export function hours(seconds) {
  const minutes = Math.round(Number(seconds) / 60);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, "0")}`;
}

/**
 * Minor units of `currency` as money, from the integer alone (no floating point on the way):
 * the currency's exponent from Intl, the decimal written out, and formatted as a string.
 */
export function money(minor, currency) {
  let digits = 2;
  try {
    digits = new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits;
  } catch {
    return `${minor} ${currency} (minor units)`;
  }
  const negative = BigInt(minor) < 0n;
  const text = (negative ? -BigInt(minor) : BigInt(minor)).toString().padStart(digits + 1, "0");
  const decimal = digits ? `${text.slice(0, -digits)}.${text.slice(-digits)}` : text;
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(`${negative ? "-" : ""}${decimal}`);
  } catch {
    return `${negative ? "-" : ""}${decimal} ${currency}`;
  }
}

/** The currencies with amounts in a summary (none when the caller may not see them). */
function currencies(summary) {
  const seen = new Set();
  for (const amount of summary.totals?.amounts ?? []) {
    if (amount.billable_minor !== undefined) seen.add(amount.currency);
  }
  return [...seen].sort();
}

const amountOf = (figures, currency) => figures.amounts?.find((a) => a.currency === currency)?.billable_minor;

/** The summary table: each group (and its subgroups, indented), then the totals. */
function table(summary, keyNames) {
  const money_ = currencies(summary);
  const head = h("tr", {},
    h("th", { scope: "col" }, keyNames.join(" / ")),
    h("th", { scope: "col", class: "num" }, "Hours"),
    h("th", { scope: "col", class: "num" }, "Billable"),
    h("th", { scope: "col", class: "num" }, "Entries"),
    money_.map((c) => h("th", { scope: "col", class: "num" }, `Amount (${c})`)));
  const rows = [];
  const row = (label, figures, cls) => h("tr", { class: cls },
    h("th", { scope: "row" }, label),
    h("td", { class: "num" }, hours(figures.seconds)),
    h("td", { class: "num" }, hours(figures.billable_seconds)),
    h("td", { class: "num" }, String(figures.entries)),
    money_.map((c) => {
      const minor = amountOf(figures, c);
      return h("td", { class: "num" }, minor === undefined ? "—" : money(minor, c));
    }));
  for (const group of summary.groups ?? []) {
    rows.push(row(group.label, group, "group"));
    for (const sub of group.groups ?? []) rows.push(row(sub.label, sub, "subgroup"));
  }
  const foot = row("Total", summary.totals, "total");
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Summary table" },
    h("table", { class: "report" }, h("thead", {}, head), h("tbody", {}, rows), h("tfoot", {}, foot)));
}

/** Hours per day by project, stacked, from a summary grouped by day then project. */
export function dayChart(summary, from, to) {
  const WIDTH = 720;
  const HEIGHT = 220;
  const PAD = { left: 56, right: 8, top: 14, bottom: 30 };
  // Calendar days from `from` to `to`, stepped in UTC (where every day has 24 hours).
  const days = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); days.length < 367; t += 86400000) {
    const day = new Date(t).toISOString().slice(0, 10);
    if (Number.isNaN(t) || day > to) break;
    days.push(day);
  }
  const byDay = new Map((summary.groups ?? []).map((g) => [g.key, g.groups ?? []]));
  // Projects by their total hours, the largest first; past the palette, one "others" colour.
  const totals = new Map();
  for (const projects of byDay.values()) {
    for (const p of projects) {
      const name = p.key ?? "";
      const t = totals.get(name) ?? { label: p.label, seconds: 0 };
      t.seconds += p.seconds;
      totals.set(name, t);
    }
  }
  const order = [...totals.entries()].sort((a, b) => b[1].seconds - a[1].seconds);
  const colour = new Map(order.map(([key], i) => [key, COLOURS[Math.min(i, COLOURS.length - 1)]]));
  const maxSeconds = Math.max(3600, ...[...byDay.values()].map((ps) => ps.reduce((s, p) => s + p.seconds, 0)));
  const maxHours = Math.ceil(maxSeconds / 3600);
  const plot = HEIGHT - PAD.top - PAD.bottom;
  const slot = (WIDTH - PAD.left - PAD.right) / Math.max(days.length, 1);
  const totalHours = hours(summary.totals?.seconds ?? 0);
  const svg = h("svg:svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: "chart days",
    role: "img",
    "aria-label": `Hours per day by project, ${from} to ${to}: ${totalHours} in all`,
  });
  for (const fraction of [0, 0.5, 1]) {
    const y = PAD.top + plot * (1 - fraction);
    svg.append(
      h("svg:line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y, y2: y, class: "grid" }),
      h("svg:text", { x: PAD.left - 4, y: y + 4, class: "axis", "text-anchor": "end" },
        `${Math.round(maxHours * fraction * 10) / 10} h`),
    );
  }
  const labelEvery = Math.max(1, Math.ceil(days.length / 8));
  days.forEach((day, i) => {
    let base = PAD.top + plot;
    const x = PAD.left + i * slot + slot * 0.12;
    const width = Math.max(slot * 0.76, 0.5);
    for (const p of [...(byDay.get(day) ?? [])].sort((a, b) => (totals.get(b.key ?? "")?.seconds ?? 0) - (totals.get(a.key ?? "")?.seconds ?? 0))) {
      const height = (p.seconds / (maxHours * 3600)) * plot;
      base -= height;
      svg.append(h("svg:rect", { x, y: base, width, height, fill: colour.get(p.key ?? ""), class: "bar" },
        h("svg:title", {}, `${day}: ${p.label} ${hours(p.seconds)}`)));
    }
    if (i % labelEvery === 0) {
      svg.append(h("svg:text", { x: x + width / 2, y: HEIGHT - 4, class: "axis", "text-anchor": "middle" }, day.slice(5)));
    }
  });
  const legend = h("ul", { class: "legend" }, order.slice(0, COLOURS.length).map(([key, t], i) => h("li", {},
    h("svg:svg", { viewBox: "0 0 10 10", width: 10, height: 10, "aria-hidden": "true" },
      h("svg:rect", { x: 0, y: 0, width: 10, height: 10, fill: colour.get(key) })),
    i === COLOURS.length - 1 && order.length > COLOURS.length ? `${t.label} and ${order.length - i - 1} more` : t.label,
    ` ${hours(t.seconds)}`)));
  return h("figure", { class: "card report-chart" }, h("figcaption", {}, "Hours per day by project"), svg, legend);
}

/**
 * The view. `params`: `from`, `to`, `group` (one key) and `then` (an optional second), as kept in
 * the address (`#/reports?from=...`), so a report can be reloaded or shared.
 */
export async function reportsView(v, params = {}) {
  const offered = periods();
  const initial = offered["this-month"];
  const from = params.from ?? initial[1];
  const to = params.to ?? initial[2];
  const group = KEYS.some(([k]) => k === params.group) ? params.group : "project";
  const then = KEYS.some(([k]) => k === params.then) && params.then !== group ? params.then : "";

  const period = h("select", {},
    Object.entries(offered).map(([name, [label]]) => h("option", { value: name }, label)),
    h("option", { value: "custom" }, "Custom"));
  period.value = Object.entries(offered).find(([, [, f, t]]) => f === from && t === to)?.[0] ?? "custom";
  const fromInput = h("input", { type: "date", value: from, required: true });
  const toInput = h("input", { type: "date", value: to, required: true });
  period.addEventListener("change", () => {
    const chosen = offered[period.value];
    if (chosen) [, fromInput.value, toInput.value] = chosen;
  });
  for (const input of [fromInput, toInput]) input.addEventListener("input", () => { period.value = "custom"; });
  const groupSelect = h("select", {}, KEYS.map(([k, label]) => h("option", { value: k }, label)));
  groupSelect.value = group;
  const thenSelect = h("select", {}, h("option", { value: "" }, "Nothing"), KEYS.map(([k, label]) => h("option", { value: k }, label)));
  thenSelect.value = then;
  const problem = status();
  const form = h("form", { class: "toolbar card", "aria-label": "Report" },
    field("Period", period), field("From", fromInput), field("To", toInput),
    field("Group by", groupSelect), field("Then by", thenSelect),
    h("button", { type: "submit" }, "Show"), problem);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = { from: fromInput.value, to: toInput.value, group: groupSelect.value, then: thenSelect.value };
    const hash = `#/reports${query(next)}`;
    if (location.hash === hash) reportsView(v, next);
    else location.hash = hash;
  });

  const groupBy = then ? `${group},${then}` : group;
  const names = [group, then].filter(Boolean).map((k) => KEYS.find(([key]) => key === k)[1]);
  let summary;
  let days;
  try {
    [summary, days] = await Promise.all([
      api("GET", `/api/reports/summary${query({ from, to, group_by: groupBy })}`),
      api("GET", `/api/reports/summary${query({ from, to, group_by: "day,project" })}`),
    ]);
  } catch (err) {
    if (!v.current()) return;
    v.show(h("h1", {}, "Reports"), form);
    say(problem, err.detail ? `${err.message}: ${err.detail}` : err.message);
    return;
  }
  const outcome = status();
  const csv = (label, path, name) => h("button", {
    type: "button",
    class: "quiet",
    onclick: async (event) => {
      const button = event.currentTarget;
      button.disabled = true;
      try {
        await download(path, name);
        say(outcome, `${name} downloaded`, true);
      } catch (err) {
        say(outcome, err.message);
      } finally {
        button.disabled = false;
      }
    },
  }, label);
  const meta = summary.meta ?? {};
  v.show(
    h("h1", {}, "Reports"),
    form,
    h("p", { class: "hint" },
      `${from} to ${to}, days in ${meta.timezone ?? "the workspace's time zone"}`,
      meta.tag_overlap ? "; an entry with several tags counts under each, so tag rows add up to more than the total" : "",
      "."),
    dayChart(days, from, to),
    summary.groups?.length
      ? table(summary, names)
      : h("p", { class: "empty" }, "No stopped entries in this period."),
    h("div", { class: "actions" },
      csv("Download summary CSV", `/api/reports/summary${query({ from, to, group_by: groupBy, format: "csv" })}`,
        `timetrack-summary-${from}-${to}.csv`),
      csv("Download detailed CSV", `/api/reports/detailed${query({ from, to, format: "csv" })}`,
        `timetrack-detailed-${from}-${to}.csv`),
      outcome));
}

/** The view's parameters from the address's query (`#/reports?from=...`). */
export function reportParams(hash) {
  const search = new URLSearchParams(hash.split("?")[1] ?? "");
  const params = {};
  for (const name of ["from", "to", "group", "then"]) {
    const value = search.get(name);
    if (value) params[name] = value;
  }
  return params;
}
