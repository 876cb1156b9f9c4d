// PBT's lineage on the sweep page: an SVG family tree of the population over
// the resource (one row per trial, spanning the steps it trained, an edge from
// parent to child where the child took the parent's checkpoint), the best
// trial's line of ancestors drawn strong, and the schedule of values that
// line trained with. The data comes from sweep_data.ts (lineageOf).
import { el, formatNumber, shortNumber } from "./format";
import { Lineage, Trial } from "./sweep_data";

const SVG = "http://www.w3.org/2000/svg";
const LEFT = 74, RIGHT = 16, TOP = 10, BOTTOM = 42;
// Rows get thinner with the population so the tree stays about this tall.
const TARGET_HEIGHT = 640;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>,
                                                   ...children: (Node | string)[]): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

// Round tick spacing (1, 2 or 5 times a power of ten) for about `count` ticks.
function tickStep(max: number, count: number): number {
  const raw = Math.max(max / count, 1e-12);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw)!;
}

// "x 0.25 → 0.3, optimizer sgd → adam": what a child's values changed from its parent's.
function perturbation(child: Trial, parent: Trial | undefined): string {
  if (!parent) return "";
  const before = new Map((parent.latest.data.params || []).map((p) => [p.key, p.value]));
  return (child.latest.data.params || []).filter((p) => before.get(p.key) !== p.value)
    .map((p) => `${p.key} ${short(before.get(p.key))} → ${short(p.value)}`).join(", ");
}

function short(v: string | undefined): string {
  return v !== undefined && v.trim() !== "" && !isNaN(Number(v)) ? formatNumber(Number(v)) : v ?? "(none)";
}

// `color`: a trial's line colour (its rank); `maxStep`: the x axis' end.
export function lineageView(lineage: Lineage, trials: Trial[], metric: string, resource: string, interval: number,
                            maxStep: number, width: number, color: (trial: number) => string): HTMLElement {
  const byId = new Map(trials.map((t) => [t.trial, t]));
  const onLine = new Set(lineage.ancestry);
  const n = lineage.rows.length;
  const rowH = Math.max(4, Math.min(18, Math.floor(TARGET_HEIGHT / Math.max(1, n))));
  const height = TOP + n * rowH + BOTTOM;
  const end = Math.max(1, maxStep, ...lineage.rows.map((r) => r.to));
  const x = (step: number) => LEFT + (step / end) * (width - LEFT - RIGHT);
  const rowOf = new Map(lineage.rows.map((r, i) => [r.trial, i]));
  const y = (trial: number) => TOP + rowOf.get(trial)! * rowH + rowH / 2;

  const chart = svg("svg", { id: "sweep-lineage", width, height, viewBox: `0 0 ${width} ${height}`,
                             "data-rows": n, "data-edges": lineage.edges.length });
  // The exploit points (every `interval` steps) as faint guides, and the axis.
  const grid = svg("g", { class: "lineage-grid" });
  if (interval > 0 && end / interval <= 60) {
    for (let s = interval; s < end; s += interval) grid.append(svg("line", { x1: x(s), x2: x(s), y1: TOP, y2: TOP + n * rowH }));
  }
  const axisY = TOP + n * rowH + 4;
  const axis = svg("g", { class: "lineage-axis" }, svg("line", { x1: LEFT, x2: width - RIGHT, y1: axisY, y2: axisY }));
  const step = Math.max(1, tickStep(end, 8));
  for (let s = 0; s <= end + 1e-9; s += step) {
    axis.append(svg("line", { x1: x(s), x2: x(s), y1: axisY, y2: axisY + 4 }),
                svg("text", { x: x(s), y: axisY + 16, "text-anchor": "middle" }, shortNumber(s)));
  }
  axis.append(svg("text", { x: width - RIGHT, y: axisY + 32, "text-anchor": "end" }, resource || "step"));
  chart.append(grid, axis);

  // Edges under the rows, the fork points over them; the best line's drawn last, on top.
  const edges = [...lineage.edges].sort((a, b) => Number(onLine.has(a.child)) - Number(onLine.has(b.child)));
  const forks: SVGCircleElement[] = [];
  for (const e of edges) {
    const best = onLine.has(e.child);
    const changed = perturbation(byId.get(e.child)!, byId.get(e.parent));
    chart.append(svg("path", { class: `lineage-edge${best ? " best" : ""}`, "data-parent": e.parent, "data-child": e.child,
                               "data-step": e.step, d: `M ${x(e.step)} ${y(e.parent)} L ${x(e.step)} ${y(e.child)}` },
                     svg("title", {}, `trial ${e.child} took trial ${e.parent}'s checkpoint at ${resource || "step"} ${e.step}` +
                         (changed ? `: ${changed}` : ""))));
    forks.push(svg("circle", { class: `lineage-fork${best ? " best" : ""}`, cx: x(e.step), cy: y(e.parent), r: Math.max(2, Math.min(4, rowH / 4)) }));
  }
  const rows = [...lineage.rows].sort((a, b) => Number(onLine.has(a.trial)) - Number(onLine.has(b.trial)));
  for (const r of rows) {
    const t = byId.get(r.trial)!;
    const best = onLine.has(r.trial);
    const tip = `trial ${r.trial}: ${resource || "step"} ${r.from}–${r.to}, ${metric} ${formatNumber(t.last)} (${t.state})`;
    const line = svg("line", { class: `lineage-trial${best ? " best" : ""}`, "data-trial": r.trial, x1: x(r.from),
                               x2: Math.max(x(r.to), x(r.from) + 2), y1: y(r.trial), y2: y(r.trial),
                               stroke: color(r.trial), "stroke-width": Math.max(2, Math.min(best ? 7 : 5, rowH - 4)) },
                     svg("title", {}, tip));
    chart.append(line);
    if (rowH >= 10) {
      chart.append(svg("a", { href: `#/run/${t.latest.info.run_id}` },
                       svg("text", { class: `lineage-label${best ? " best" : ""}`, x: LEFT - 8, y: y(r.trial) + 4,
                                     "text-anchor": "end" }, `trial ${r.trial}`)));
    }
  }
  chart.append(...forks);
  return el("div", { class: "chart lineage" }, chart);
}

// The best trial's values over the resource: one row per ancestor, oldest first.
export function scheduleTable(lineage: Lineage, trials: Trial[], params: string[], resource: string): HTMLElement {
  const runOf = new Map(trials.map((t) => [t.trial, t.latest.info.run_id]));
  return el("table", { class: "list trials", id: "sweep-schedule" },
    el("thead", {}, el("tr", {}, el("th", {}, resource || "step"), el("th", {}, "Trial"), ...params.map((p) => el("th", {}, p)))),
    el("tbody", {}, ...lineage.schedule.map((s, i) => {
      const prev = i ? lineage.schedule[i - 1].params : undefined;
      return el("tr", { "data-trial": String(s.trial) },
        el("td", { class: "num" }, `${s.from}–${s.to}`),
        el("td", {}, el("a", { href: `#/run/${runOf.get(s.trial)}` }, String(s.trial))),
        ...params.map((p) => el("td", { class: prev && prev[p] !== s.params[p] ? "num changed" : "num" }, short(s.params[p]))));
    })));
}
