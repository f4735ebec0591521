// The 24-hour chart of a webhook, drawn as SVG from GET .../webhooks/{id}/stats.

import { h } from "./dom.js";

const WIDTH = 720;
const HEIGHT = 150;
const PAD = { left: 40, right: 8, top: 10, bottom: 22 };

const hourOf = (start) => String(start).slice(11, 13);

function frame(title, max, unit) {
  const svg = h("svg:svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: "chart",
    role: "img",
    "aria-label": title,
  });
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  for (const fraction of [0, 0.5, 1]) {
    const y = PAD.top + plotHeight * (1 - fraction);
    svg.append(
      h("svg:line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y, y2: y, class: "grid" }),
      h("svg:text", { x: PAD.left - 4, y: y + 4, class: "axis", "text-anchor": "end" },
        `${Math.round(max * fraction)}${fraction === 1 ? unit : ""}`),
    );
  }
  return svg;
}

/** Deliveries per hour (delivered and failed, stacked) and latency (p50 and p95), with a summary. */
export function statsCharts(buckets) {
  const slot = (WIDTH - PAD.left - PAD.right) / Math.max(buckets.length, 1);
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const delivered = buckets.reduce((sum, b) => sum + b.delivered, 0);
  const failed = buckets.reduce((sum, b) => sum + b.failed, 0);

  const maxCount = Math.max(1, ...buckets.map((b) => b.delivered + b.failed));
  const counts = frame(
    `Attempts per hour over the last 24 hours: ${delivered} delivered, ${failed} failed`,
    maxCount,
    "",
  );
  buckets.forEach((bucket, i) => {
    const x = PAD.left + i * slot + slot * 0.15;
    const width = slot * 0.7;
    const okHeight = (bucket.delivered / maxCount) * plotHeight;
    const badHeight = (bucket.failed / maxCount) * plotHeight;
    const base = PAD.top + plotHeight;
    const label = `${hourOf(bucket.start)}:00 UTC: ${bucket.delivered} delivered, ${bucket.failed} failed`;
    counts.append(
      h("svg:rect", { x, y: base - okHeight, width, height: okHeight, class: "delivered" },
        h("svg:title", {}, label)),
      h("svg:rect", { x, y: base - okHeight - badHeight, width, height: badHeight, class: "failed" },
        h("svg:title", {}, label)),
    );
    if (i % 3 === 0 || i === buckets.length - 1) {
      counts.append(h("svg:text", { x: x + width / 2, y: HEIGHT - 6, class: "axis", "text-anchor": "middle" },
        hourOf(bucket.start)));
    }
  });

  const maxMs = Math.max(1, ...buckets.map((b) => b.p95_ms ?? 0));
  const latency = frame("Attempt latency per hour over the last 24 hours (p50 and p95)", maxMs, " ms");
  for (const [key, cls] of [["p95_ms", "p95"], ["p50_ms", "p50"]]) {
    const points = buckets
      .map((b, i) => (b[key] === null || b[key] === undefined
        ? null
        : `${PAD.left + i * slot + slot / 2},${PAD.top + plotHeight * (1 - b[key] / maxMs)}`))
      .filter(Boolean);
    if (points.length > 1) latency.append(h("svg:polyline", { points: points.join(" "), class: cls }));
    for (const point of points) {
      const [cx, cy] = point.split(",");
      latency.append(h("svg:circle", { cx, cy, r: 3.5, class: cls }));
    }
  }
  buckets.forEach((bucket, i) => {
    if (i % 3 === 0 || i === buckets.length - 1) {
      latency.append(h("svg:text", { x: PAD.left + i * slot + slot / 2, y: HEIGHT - 6, class: "axis", "text-anchor": "middle" },
        hourOf(bucket.start)));
    }
  });

  const worst = buckets.reduce((m, b) => Math.max(m, b.p95_ms ?? 0), 0);
  return h("section", { class: "charts", "aria-label": "Last 24 hours" },
    h("h2", {}, "Last 24 hours"),
    h("p", { class: "summary" },
      `${delivered} delivered, ${failed} failed`,
      worst ? `; slowest hourly p95 ${worst} ms` : "",
      " (hours in UTC)"),
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
