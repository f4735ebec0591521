// Building the page: every value goes in as text (a text node or an attribute), never as HTML.

/** An element `tag` with attributes (`on...` are listeners) and children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = tag.startsWith("svg:")
    ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4))
    : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.setAttribute("class", value);
    } else if (name === "value" && "value" in el) {
      el.value = value;
    } else if (name === "checked" && "checked" in el) {
      el.checked = Boolean(value);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

/** Appends children: nodes as they are, anything else as text; arrays are flattened. */
export function append(el, ...children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, ...children);
}

let ids = 0;
/** A fresh element id, for labels. */
export function uid(prefix = "f") {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A labelled control: the label, the control and an optional hint, in one block. */
export function field(label, control, hint) {
  if (!control.id) control.id = uid();
  const parts = [h("label", { for: control.id }, label), control];
  if (hint) {
    const hintId = uid("hint");
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("p", { class: "hint", id: hintId }, hint));
  }
  return h("div", { class: "field" }, parts);
}

/** A place for a control's outcome: errors are announced, successes shown. */
export function status() {
  return h("p", { class: "status", role: "status", "aria-live": "polite" });
}

/** Shows `message` in `el` as an error (or as a success with `ok`). */
export function say(el, message, ok = false) {
  el.className = `status ${ok ? "ok" : "error"}`;
  el.setAttribute("role", ok ? "status" : "alert");
  el.textContent = message;
}

/** Clears a status element. */
export function clear(el) {
  el.className = "status";
  el.textContent = "";
}

const pad = (n) => String(n).padStart(2, "0");

/** The browser's time zone, short ("UTC", "GMT+1", "CET"), for labels. */
export function zoneName(date = new Date()) {
  const part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
    .formatToParts(date)
    .find((p) => p.type === "timeZoneName");
  return part ? part.value : "local time";
}

/** `2026-11-26T18:30:05Z` in the browser's time zone: `2026-11-26 19:30:05 GMT+1`; "—" for none. */
export function when(rfc3339) {
  if (!rfc3339) return "—";
  const date = new Date(rfc3339);
  if (Number.isNaN(date.getTime())) return String(rfc3339);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} `
    + `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())} ${zoneName(date)}`;
}

/** `2026-11-26T18:30:05Z` as `2026-11-26 18:30:05 UTC`, the value as stored. */
export function utc(rfc3339) {
  return String(rfc3339).replace("T", " ").replace(/(\.\d+)?Z$/, " UTC");
}

/** How long ago (or ahead) a time is, in words: "just now", "3 min ago", "in 2 h", "5 days ago". */
export function relative(rfc3339, now = Date.now()) {
  const seconds = Math.round((new Date(rfc3339).getTime() - now) / 1000);
  const size = Math.abs(seconds);
  if (size < 45) return "just now";
  const [amount, unit] = size < 3600 ? [Math.round(size / 60), "min"]
    : size < 86400 ? [Math.round(size / 3600), "h"]
      : [Math.round(size / 86400), Math.round(size / 86400) === 1 ? "day" : "days"];
  return seconds < 0 ? `${amount} ${unit} ago` : `in ${amount} ${unit}`;
}

/**
 * A time as an element: local (or relative, with `ago`) as its text, the UTC value on hover and
 * in `datetime`; "—" for none.
 */
export function stamp(rfc3339, { ago = false } = {}) {
  if (!rfc3339) return "—";
  const text = ago ? relative(rfc3339) : when(rfc3339);
  const title = ago ? `${when(rfc3339)} (${utc(rfc3339)})` : utc(rfc3339);
  return h("time", { datetime: rfc3339, title }, text);
}

/** An RFC 3339 time as the value of a `datetime-local` input (the browser's time zone). */
export function rfc3339ToLocal(rfc3339) {
  const date = new Date(rfc3339);
  if (!rfc3339 || Number.isNaN(date.getTime())) return "";
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T`
    + `${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** A value from a `datetime-local` input (the browser's time zone) as RFC 3339 UTC. */
export function localToRfc3339(value) {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A button that copies `text` and shows the outcome next to itself; `name` is its accessible
 * name when the label alone would not say what it copies. */
export function copyButton(text, label = "Copy", name = undefined) {
  const note = h("span", { class: "copied", "aria-live": "polite" });
  const button = h("button", {
    type: "button",
    class: "quiet",
    "aria-label": name,
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(text);
        note.textContent = "Copied";
      } catch {
        note.textContent = "Select the text and copy it";
      }
    },
  }, label);
  return h("span", { class: "copy" }, button, note);
}
