// The 24-hour chart of a webhook, drawn as SVG from GET .../webhooks/{id}/stats.

import { h, zoneName } from "./dom.js";

const HEIGHT = 150;
const PAD = { right: 8, top: 12, bottom: 22 };
/** About how wide a character of the axis text is (14 px, style.css), for the left margin. */
const CHAR = 8.5;

/** The hour a bucket starts, in the browser's time zone ("09"). */
const hourOf = (start) => String(new Date(start).getHours()).padStart(2, "0");

/** The smallest of 1, 2 or 5 times a power of ten that is at least `value` (and at least 1). */
export function niceCeiling(value) {
  if (!(value > 1)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= value) return step * power;
  }
  return 10 * power;
}

/**
 * An empty chart of `width` user units: a grid at 0, half and `max`, labelled; the left margin
 * fits the longest label, so none is cut.
 */
function frame(title, max, unit, width) {
  const labels = [0, 0.5, 1].map((fraction) => `${Math.round(max * fraction)}${fraction === 1 ? unit : ""}`);
  const left = 8 + CHAR * Math.max(...labels.map((l) => l.length));
  const svg = h("svg:svg", {
    viewBox: `0 0 ${width} ${HEIGHT}`,
    width,
    height: HEIGHT,
    class: "chart",
    role: "img",
    "aria-label": title,
  });
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  [0, 0.5, 1].forEach((fraction, i) => {
    const y = PAD.top + plotHeight * (1 - fraction);
    svg.append(
      h("svg:line", { x1: left, x2: width - PAD.right, y1: y, y2: y, class: "grid" }),
      h("svg:text", { x: left - 4, y: y + 4, class: "axis", "text-anchor": "end" }, labels[i]),
    );
  });
  return { svg, left, plotHeight };
}

/**
 * Deliveries per hour (delivered and failed, stacked) and latency (p50 and p95), with a summary.
 * `width` is the space for one chart, in CSS pixels: the charts are drawn at that size, so their
 * text keeps its size on a narrow screen instead of being scaled down with the drawing.
 */
export function statsCharts(buckets, width = 720) {
  const W = Math.max(280, Math.min(720, Math.floor(width)));
  // Hour labels every 3 hours, or every 6 when narrow.
  const every = W < 480 ? 6 : 3;
  const delivered = buckets.reduce((sum, b) => sum + b.delivered, 0);
  const failed = buckets.reduce((sum, b) => sum + b.failed, 0);

  const maxCount = niceCeiling(Math.max(1, ...buckets.map((b) => b.delivered + b.failed)));
  const countFrame = frame(
    `Attempts per hour over the last 24 hours: ${delivered} delivered, ${failed} failed`,
    maxCount,
    "",
    W,
  );
  const counts = countFrame.svg;
  let { left, plotHeight } = countFrame;
  let slot = (W - left - PAD.right) / Math.max(buckets.length, 1);
  buckets.forEach((bucket, i) => {
    const x = left + i * slot + slot * 0.15;
    const width = slot * 0.7;
    const okHeight = (bucket.delivered / maxCount) * plotHeight;
    const badHeight = (bucket.failed / maxCount) * plotHeight;
    const base = PAD.top + plotHeight;
    const label = `${hourOf(bucket.start)}:00 ${zoneName()}: ${bucket.delivered} delivered, ${bucket.failed} failed`;
    counts.append(
      h("svg:rect", { x, y: base - okHeight, width, height: okHeight, class: "delivered" },
        h("svg:title", {}, label)),
      h("svg:rect", { x, y: base - okHeight - badHeight, width, height: badHeight, class: "failed" },
        h("svg:title", {}, label)),
    );
    if (i % every === 0) {
      counts.append(h("svg:text", { x: x + width / 2, y: HEIGHT - 6, class: "axis", "text-anchor": "middle" },
        hourOf(bucket.start)));
    }
  });

  const maxMs = niceCeiling(Math.max(1, ...buckets.map((b) => b.p95_ms ?? 0)));
  const latencyFrame = frame("Attempt latency per hour over the last 24 hours (p50 and p95)", maxMs, " ms", W);
  const latency = latencyFrame.svg;
  ({ left, plotHeight } = latencyFrame);
  slot = (W - left - PAD.right) / Math.max(buckets.length, 1);
  for (const [key, cls] of [["p95_ms", "p95"], ["p50_ms", "p50"]]) {
    const points = buckets
      .map((b, i) => (b[key] === null || b[key] === undefined
        ? null
        : `${left + i * slot + slot / 2},${PAD.top + plotHeight * (1 - b[key] / maxMs)}`))
      .filter(Boolean);
    if (points.length > 1) latency.append(h("svg:polyline", { points: points.join(" "), class: cls }));
    for (const point of points) {
      const [cx, cy] = point.split(",");
      latency.append(h("svg:circle", { cx, cy, r: 3.5, class: cls }));
    }
  }
  buckets.forEach((bucket, i) => {
    if (i % every === 0) {
      latency.append(h("svg:text", { x: left + i * slot + slot / 2, y: HEIGHT - 6, class: "axis", "text-anchor": "middle" },
        hourOf(bucket.start)));
    }
  });

  const worst = buckets.reduce((m, b) => Math.max(m, b.p95_ms ?? 0), 0);
  return h("section", { class: "charts", "aria-label": "Last 24 hours" },
    h("h2", {}, "Last 24 hours"),
    h("p", { class: "summary" },
      `${delivered} delivered, ${failed} failed`,
      worst ? `; slowest hourly p95 ${worst} ms` : "",
      ` (hours in ${zoneName()})`),
    h("div", { class: "chart-pair" },
      h("figure", {},
        counts,
        h("figcaption", {}, h("span", { class: "key delivered" }), "delivered ",
          h("span", { class: "key failed" }), "failed (attempts per hour)")),
      h("figure", {},
        latency,
        h("figcaption", {}, h("span", { class: "key p50" }), "p50 ",
          h("span", { class: "key p95" }), "p95 (attempt duration)"))));
}
