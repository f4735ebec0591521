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

/** `2026-11-26T18:30:05Z` as `2026-11-26 18:30:05 UTC`; "—" for none. */
export function when(rfc3339) {
  if (!rfc3339) return "—";
  return String(rfc3339).replace("T", " ").replace(/(\.\d+)?Z$/, " UTC");
}

/** A value from a `datetime-local` input (the browser's time zone) as RFC 3339 UTC. */
export function localToRfc3339(value) {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A button that shows the secret-copying outcome next to itself. */
export function copyButton(text, label = "Copy") {
  const note = h("span", { class: "copied", "aria-live": "polite" });
  const button = h("button", {
    type: "button",
    class: "quiet",
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
