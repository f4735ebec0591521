// The Invoices view (owners and admins): the list with status and payment status; a new
// invoice from a client and a period, its preview shown before it is created; an invoice with its
// lines, totals and payments, and the steps its status allows (issue, record a payment, void with
// a reason, delete a draft); its PDF opened in a new tab. Everything goes through /api/invoices.

import { ApiError, api, query, session } from "./api.js";
import { field, h, say, status } from "./dom.js";
import { money } from "./reports.js";

const GROUPINGS = [
  ["", "One line per rate"],
  ["project", "Project"],
  ["project,task", "Project and task"],
  ["user", "Member"],
  ["day", "Day"],
];

const STATUSES = ["draft", "issued", "void"];
const PAYMENTS = ["unpaid", "partially_paid", "paid", "overdue"];
const label = (s) => s.replace("_", " ");

/** `YYYY-MM-DD` of a local calendar date. */
const iso = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;

/** The number of decimals of `currency`'s minor unit, as the browser knows it (2 otherwise). */
function digitsOf(currency) {
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits;
  } catch {
    return 2;
  }
}

/**
 * An amount typed in major units (`120`, `120.5`, `1,234.50`) as integer minor units of
 * `currency`, from the digits alone (no floating point); null when it is not such an amount.
 */
export function toMinor(text, currency) {
  const digits = digitsOf(currency);
  const plain = text.trim().replaceAll(",", "");
  const match = /^(\d+)(?:\.(\d*))?$/.exec(plain);
  if (!match || (match[2] ?? "").length > digits) return null;
  const minor = BigInt(match[1] + (match[2] ?? "").padEnd(digits, "0"));
  return minor <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(minor) : null;
}

function badge(text, kind) {
  return h("span", { class: `badge ${kind}` }, label(text));
}

/** The lines and totals of an invoice (or of a preview). */
function body(invoice) {
  const c = invoice.currency;
  const rows = invoice.lines.map((line) => h("tr", {},
    h("td", {}, line.description),
    h("td", { class: "num" }, line.kind === "time" ? `${line.quantity} h` : line.quantity),
    h("td", { class: "num" }, money(line.unit_price_minor, c)),
    h("td", { class: "num" }, money(line.amount_minor, c)),
    h("td", { class: "num hint" }, line.kind === "time" ? `${line.entry_ids.length}` : "")));
  const total = (name, minor, strong = false) => h("tr", { class: strong ? "strong" : null },
    h("th", { scope: "row", colspan: 3 }, name), h("td", { class: "num" }, money(minor, c)), h("td", {}));
  const totals = [total("Subtotal", invoice.subtotal_minor)];
  if (invoice.discount_minor) totals.push(total(`Discount (${invoice.discount_percent} %)`, -invoice.discount_minor));
  if (invoice.tax_minor) totals.push(total(`Tax (${invoice.tax_percent} %)`, invoice.tax_minor));
  totals.push(total("Total", invoice.total_minor, true));
  if (invoice.paid_minor) {
    totals.push(total("Paid", -invoice.paid_minor));
    totals.push(total("Balance due", invoice.balance_minor, true));
  }
  return h("div", { class: "table-wrap" }, h("table", { class: "invoice-lines" },
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Description"), h("th", { scope: "col", class: "num" }, "Quantity"),
      h("th", { scope: "col", class: "num" }, "Unit price"), h("th", { scope: "col", class: "num" }, "Amount"),
      h("th", { scope: "col", class: "num" }, "Entries"))),
    h("tbody", {}, rows),
    h("tfoot", {}, totals)));
}

/** `#/invoices`: the list, filtered by status and payment status. */
export async function invoicesView(v, params) {
  const statusSelect = h("select", {}, h("option", { value: "" }, "Any"), STATUSES.map((s) => h("option", { value: s }, label(s))));
  statusSelect.value = params.status ?? "";
  const paymentSelect = h("select", {}, h("option", { value: "" }, "Any"), PAYMENTS.map((s) => h("option", { value: s }, label(s))));
  paymentSelect.value = params.payment_status ?? "";
  const filter = h("form", { class: "toolbar card", "aria-label": "Invoice filter" },
    field("Status", statusSelect), field("Payment", paymentSelect), h("button", { type: "submit" }, "Filter"));
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/invoices${query({ status: statusSelect.value, payment_status: paymentSelect.value })}`;
  });
  let page;
  try {
    page = await api("GET", `/api/invoices${query({ status: params.status, payment_status: params.payment_status, limit: 100 })}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) {
      v.show(h("h1", {}, "Invoices"), h("p", { class: "empty" }, "Invoices are for the workspace's owners and admins."));
      return;
    }
    v.failure(err, () => invoicesView(v, params));
    return;
  }
  const rows = page.data.map((i) => h("tr", {},
    h("td", {}, h("a", { href: `#/invoices/${encodeURIComponent(i.id)}` }, i.number ?? "Draft")),
    h("td", {}, i.client.name),
    h("td", {}, `${i.period.from} – ${i.period.to}`),
    h("td", {}, i.due_date ?? "—"),
    h("td", { class: "num" }, money(i.total_minor, i.currency)),
    h("td", { class: "num" }, money(i.balance_minor, i.currency)),
    h("td", {}, badge(i.status, i.status)),
    h("td", {}, badge(i.payment_status, i.payment_status))));
  v.show(
    h("div", { class: "title-row" }, h("h1", {}, "Invoices"), h("a", { class: "button", href: "#/invoices/new" }, "New invoice")),
    filter,
    rows.length
      ? h("div", { class: "table-wrap" }, h("table", { class: "invoices" },
        h("thead", {}, h("tr", {}, ["Number", "Client", "Period", "Due", "Total", "Balance", "Status", "Payment"]
          .map((name) => h("th", { scope: "col", class: ["Total", "Balance"].includes(name) ? "num" : null }, name)))),
        h("tbody", {}, rows)))
      : h("p", { class: "empty" }, "No invoices yet. Make one from a client's uninvoiced time."),
    page.next_cursor ? h("p", { class: "hint" }, "The newest 100 are shown.") : null);
}

/** `#/invoices/new`: a client and a period; Preview shows the invoice, Create writes the draft. */
export async function newInvoiceView(v) {
  let clients;
  try {
    clients = (await api("GET", "/api/clients?limit=200")).data;
  } catch (err) {
    v.failure(err, () => newInvoiceView(v));
    return;
  }
  const today = new Date();
  const client = h("select", { required: true }, clients.map((c) => h("option", { value: c.id }, `${c.name} (${c.currency})`)));
  const from = h("input", { type: "date", required: true, value: iso(new Date(today.getFullYear(), today.getMonth() - 1, 1)) });
  const to = h("input", { type: "date", required: true, value: iso(new Date(today.getFullYear(), today.getMonth(), 0)) });
  const grouping = h("select", {}, GROUPINGS.map(([value, name]) => h("option", { value }, name)));
  grouping.value = "project";
  const discount = h("input", { type: "text", inputmode: "decimal", value: "0", size: 6 });
  const tax = h("input", { type: "text", inputmode: "decimal", value: "0", size: 6 });
  const notes = h("textarea", { rows: 3, maxlength: 5000 });
  const problem = status();
  const shown = h("div", { class: "preview" });
  const create = h("button", { type: "button", disabled: true }, "Create draft");
  const request = () => ({
    client_id: client.value,
    from: from.value,
    to: to.value,
    group_by: grouping.value ? grouping.value.split(",") : [],
    discount_percent: discount.value.trim() || "0",
    tax_percent: tax.value.trim() || "0",
    notes: notes.value.trim() || undefined,
  });
  // A change of the form makes the preview stale: Create waits for the next one.
  const form = h("form", { class: "card stack", "aria-label": "New invoice" },
    field("Client", client), field("From", from), field("To", to), field("Lines", grouping),
    field("Discount (%)", discount), field("Tax (%)", tax, "On what remains after the discount"),
    field("Notes", notes, "Printed on the invoice"),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Preview"), create, problem));
  form.addEventListener("input", () => { create.disabled = true; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    create.disabled = true;
    shown.replaceChildren();
    try {
      const preview = await api("POST", "/api/invoices/preview", request());
      say(problem, `Preview: ${preview.lines.length} lines, total ${money(preview.total_minor, preview.currency)}`, true);
      shown.replaceChildren(h("h2", {}, "Preview"), body(preview));
      create.disabled = false;
    } catch (err) {
      say(problem, err.detail ? `${err.message}: ${err.detail}` : err.message);
    }
  });
  create.addEventListener("click", async () => {
    create.disabled = true;
    try {
      const draft = await api("POST", "/api/invoices", request());
      location.hash = `#/invoices/${encodeURIComponent(draft.id)}`;
    } catch (err) {
      say(problem, err.detail ? `${err.message}: ${err.detail}` : err.message);
    }
  });
  v.show(
    h("p", { class: "crumbs" }, h("a", { href: "#/invoices" }, "Invoices"), " / new"),
    h("h1", {}, "New invoice"),
    clients.length ? form : h("p", { class: "empty" }, "No clients yet: an invoice bills a client's projects."),
    shown);
}

/** Opens the invoice's PDF in a new tab: fetched with the key in a header, shown from a blob. */
async function openPdf(invoice, outcome) {
  const tab = window.open("", "_blank");
  try {
    const response = await fetch(`/api/invoices/${encodeURIComponent(invoice.id)}`, {
      headers: { Accept: "application/pdf", Authorization: `Bearer ${session.key}` },
      cache: "no-store",
      credentials: "omit",
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const url = URL.createObjectURL(new Blob([await response.arrayBuffer()], { type: "application/pdf" }));
    if (tab) tab.location.href = url;
    else window.location.assign(url);
    setTimeout(() => URL.revokeObjectURL(url), 120_000);
    say(outcome, "The PDF opened in a new tab", true);
  } catch (err) {
    if (tab) tab.close();
    say(outcome, `The PDF could not be made: ${err.message}`);
  }
}

/** `#/invoices/{id}`: the invoice and the steps its status allows; `notice` says what was just
 * done. */
export async function invoiceView(v, id, notice) {
  let invoice;
  try {
    invoice = await api("GET", `/api/invoices/${encodeURIComponent(id)}`);
  } catch (err) {
    v.failure(err, () => invoiceView(v, id));
    return;
  }
  const c = invoice.currency;
  const outcome = status();
  if (notice) say(outcome, notice, true);
  const step = async (run, done) => {
    try {
      await run();
    } catch (err) {
      say(outcome, err.detail ? `${err.message}: ${err.detail}` : err.message);
      return;
    }
    await invoiceView(v, id, done);
  };
  const actions = h("div", { class: "actions" },
    h("button", { type: "button", class: "quiet", onclick: () => openPdf(invoice, outcome) }, "Open PDF"));
  const forms = [];
  if (invoice.status === "draft") {
    actions.append(
      h("button", { type: "button", onclick: () => step(() => api("POST", `/api/invoices/${encodeURIComponent(id)}/issue`), "Issued") }, "Issue"),
      h("button", {
        type: "button", class: "danger", onclick: async () => {
          if (!confirm("Delete this draft? Its entries become uninvoiced again.")) return;
          try {
            await api("DELETE", `/api/invoices/${encodeURIComponent(id)}`);
            location.hash = "#/invoices";
          } catch (err) {
            say(outcome, err.message);
          }
        },
      }, "Delete draft"));
  }
  if (invoice.status === "issued") {
    const amount = h("input", { type: "text", inputmode: "decimal", required: true, size: 10 });
    const paidOn = h("input", { type: "date", required: true, value: iso(new Date()) });
    const note = h("input", { type: "text", maxlength: 1000 });
    const payment = h("form", { class: "card toolbar", "aria-label": "Record a payment" },
      field(`Amount (${c})`, amount, `Balance ${money(invoice.balance_minor, c)}`), field("Paid on", paidOn), field("Note", note),
      h("button", { type: "submit" }, "Record payment"));
    payment.addEventListener("submit", (event) => {
      event.preventDefault();
      const minor = toMinor(amount.value, c);
      if (minor === null) {
        say(outcome, `Type the amount in ${c}, for example 120.50`);
        return;
      }
      step(() => api("POST", `/api/invoices/${encodeURIComponent(id)}/payments`,
        { amount_minor: minor, paid_on: paidOn.value, note: note.value.trim() || undefined }), "Payment recorded");
    });
    const reason = h("input", { type: "text", required: true, maxlength: 1000 });
    const voiding = h("form", { class: "card toolbar", "aria-label": "Void" },
      field("Reason", reason, "Voiding releases the entries; the number is not given again"),
      h("button", { type: "submit", class: "danger" }, "Void"));
    voiding.addEventListener("submit", (event) => {
      event.preventDefault();
      step(() => api("POST", `/api/invoices/${encodeURIComponent(id)}/void`, { reason: reason.value }), "Voided");
    });
    forms.push(payment, voiding);
  }
  const facts = [
    ["Client", invoice.client.name],
    ["Period", `${invoice.period.from} – ${invoice.period.to}`],
    ["Issue date", invoice.issue_date ?? "—"],
    ["Due date", invoice.due_date ?? "—"],
  ];
  if (invoice.void_reason) facts.push(["Void reason", invoice.void_reason]);
  if (invoice.notes) facts.push(["Notes", invoice.notes]);
  v.show(
    h("p", { class: "crumbs" }, h("a", { href: "#/invoices" }, "Invoices"), " / ", invoice.number ?? "draft"),
    h("div", { class: "title-row" },
      h("h1", {}, invoice.number ? `Invoice ${invoice.number}` : "Draft invoice"),
      h("span", {}, badge(invoice.status, invoice.status), " ", badge(invoice.payment_status, invoice.payment_status))),
    h("dl", { class: "facts" }, facts.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)])),
    body(invoice),
    invoice.payments.length
      ? h("div", {}, h("h2", {}, "Payments"), h("ul", { class: "payments" },
        invoice.payments.map((p) => h("li", {}, `${p.paid_on}: ${money(p.amount_minor, c)}`, p.note ? ` — ${p.note}` : ""))))
      : null,
    actions,
    outcome,
    forms);
}

/** The view's filter from the address's query (`#/invoices?status=...`). */
export function invoiceParams(hash) {
  const search = new URLSearchParams(hash.split("?")[1] ?? "");
  const params = {};
  for (const name of ["status", "payment_status"]) {
    const value = search.get(name);
    if (value) params[name] = value;
  }
  return params;
}
