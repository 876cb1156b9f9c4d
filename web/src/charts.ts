// Charts: uPlot line charts for metric curves, and two hand-drawn canvas
// charts (parallel coordinates, scatter) for comparing runs.
import uPlot from "uplot";
import { axisPosition, wantsLogScale } from "./columns";
import { seriesColor, formatNumber, shortNumber } from "./format";

export interface Curve { label: string; xs: number[]; ys: number[]; }

// Exponential moving average with debiasing (TensorBoard's smoothing): weight in [0, 1).
export function smooth(ys: number[], weight: number): number[] {
  if (weight <= 0) return ys;
  const out: number[] = [];
  let last = 0, n = 0;
  for (const y of ys) {
    if (!isFinite(y)) { out.push(y); continue; }
    last = last * weight + (1 - weight) * y;
    n++;
    out.push(last / (1 - Math.pow(weight, n)));
  }
  return out;
}

// Zoom that reads the detail: dragging over the plot asks `zoom` for the
// points of that x range (whole steps) and draws them; a double click asks
// for the whole range again (null).
export type ZoomFetch = (range: [number, number] | null) => Promise<uPlot.AlignedData>;

export function lineChart(host: HTMLElement, title: string, curves: Curve[], xLabel: string,
                          width: number, zoom?: ZoomFetch): uPlot {
  const opts: uPlot.Options = {
    title, width, height: 220,
    ...(zoom ? { cursor: { drag: { x: true, y: false, setScale: false } },
                 hooks: { setSelect: [(u: uPlot) => zoomTo(u, zoom)], ready: [(u: uPlot) => {
                   u.over.addEventListener("dblclick", () => void zoomOut(u, zoom));
                 }] } } : {}),
    scales: { x: { time: xLabel === "time" } },
    axes: [{ label: xLabel === "time" ? "" : xLabel }, { size: 56, values: (_u, ticks) => ticks.map(shortNumber) }],
    series: [{ label: xLabel }, ...curves.map((c, i) => ({
      label: c.label, stroke: seriesColor(i), width: 1.5, spanGaps: true, points: { show: false },
    }))],
    legend: { show: curves.length > 1 },
  };
  return new uPlot(opts, alignCurves(curves), host);
}

async function zoomTo(u: uPlot, zoom: ZoomFetch): Promise<void> {
  if (u.select.width < 3) return;
  const lo = Math.floor(u.posToVal(u.select.left, "x")), hi = Math.ceil(u.posToVal(u.select.left + u.select.width, "x"));
  u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
  const data = await zoom([lo, Math.max(lo, hi)]);
  u.setData(data, false);
  u.setScale("x", { min: lo, max: Math.max(lo + 1, hi) });
}

async function zoomOut(u: uPlot, zoom: ZoomFetch): Promise<void> {
  u.setData(await zoom(null), true);
}

// A sweep's progress: the best value so far against the number of completed
// trials (a step line), and each completed trial's final value as a dot.
// best[i] and finals[i] belong to completed trial i + 1 (null: not known).
export function bestSoFarChart(host: HTMLElement, metric: string, best: (number | null)[],
                               finals: (number | null)[], width: number): uPlot {
  const xs = best.map((_, i) => i + 1);
  const dots = seriesColor(1);
  const opts: uPlot.Options = {
    title: `best ${metric} so far`, width, height: 240,
    // Whole trials only, and half a trial of margin so the end dots show.
    scales: { x: { time: false, range: [0.5, xs.length + 0.5] } },
    axes: [{ label: "completed trials", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] },
           { size: 68, values: (_u, ticks) => ticks.map(shortNumber) }],  // close values need digits
    series: [{ label: "completed" },
      { label: `best ${metric}`, stroke: seriesColor(0), width: 2, spanGaps: true,
        paths: uPlot.paths.stepped!({ align: 1 }),
        points: { show: false } },
      { label: `trial's ${metric}`, stroke: dots, width: 0, paths: () => null,
        points: { show: true, size: 7, fill: dots, stroke: dots } }],
  };
  return new uPlot(opts, [xs, best, finals], host);
}

export function alignCurves(curves: Curve[]): uPlot.AlignedData {
  if (!curves.length) return [[]];
  return uPlot.join(curves.map((c) => [c.xs, c.ys] as uPlot.AlignedData));
}

export interface Axis { name: string; values: (number | string | undefined)[]; }

function scaleFor(values: (number | string | undefined)[]): (v: number | string | undefined) => number | null {
  const present = values.filter((v) => v !== undefined && v !== "");
  const numeric = present.every((v) => typeof v === "number" || !isNaN(Number(v)));
  if (numeric) {
    const nums = present.map(Number);
    const lo = Math.min(...nums), hi = Math.max(...nums), log = wantsLogScale(present);
    return (v) => (v === undefined || v === "" ? null : axisPosition(Number(v), lo, hi, log));
  }
  const cats = [...new Set(present.map(String))].sort();
  return (v) => (v === undefined ? null : cats.length < 2 ? 0.5 : cats.indexOf(String(v)) / (cats.length - 1));
}

function axisLabels(values: (number | string | undefined)[]): [string, string] {
  const present = values.filter((v) => v !== undefined && v !== "");
  if (present.every((v) => !isNaN(Number(v)))) {
    const nums = present.map(Number);
    return [formatNumber(Math.max(...nums)), formatNumber(Math.min(...nums))];
  }
  const cats = [...new Set(present.map(String))].sort();
  return [cats[cats.length - 1] || "", cats[0] || ""];
}

function canvas(host: HTMLElement, width: number, height: number): CanvasRenderingContext2D {
  const c = document.createElement("canvas");
  const dpr = window.devicePixelRatio || 1;
  c.width = width * dpr; c.height = height * dpr;
  c.style.width = `${width}px`; c.style.height = `${height}px`;
  host.append(c);
  const ctx = c.getContext("2d")!;
  ctx.scale(dpr, dpr);
  ctx.font = "12px system-ui, sans-serif";
  return ctx;
}

// One vertical axis per param plus the metric last; one polyline per run,
// coloured by run unless `colors` gives each run's colour.
export function parallelCoordinates(host: HTMLElement, axes: Axis[], width: number, colors?: string[]): void {
  const height = 280, top = 30, bottom = 30, left = 50, right = 50;
  const ctx = canvas(host, width, height);
  host.dataset.logAxes = axes.filter((a) => wantsLogScale(a.values)).map((a) => a.name).join(",");
  const step = axes.length > 1 ? (width - left - right) / (axes.length - 1) : 0;
  const scales = axes.map((a) => scaleFor(a.values));
  const runs = axes.length ? axes[0].values.length : 0;
  for (let r = 0; r < runs; r++) {
    ctx.strokeStyle = colors?.[r] ?? seriesColor(r); ctx.lineWidth = 1.5; ctx.beginPath();
    let started = false;
    axes.forEach((a, i) => {
      const t = scales[i](a.values[r]);
      if (t === null) { started = false; return; }
      const x = left + i * step, y = top + (1 - t) * (height - top - bottom);
      if (started) ctx.lineTo(x, y); else ctx.moveTo(x, y);
      started = true;
    });
    ctx.stroke();
  }
  ctx.fillStyle = "#333"; ctx.strokeStyle = "#888"; ctx.lineWidth = 1; ctx.textAlign = "center";
  axes.forEach((a, i) => {
    const x = left + i * step;
    ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, height - bottom); ctx.stroke();
    const [hi, lo] = axisLabels(a.values);
    ctx.fillText(wantsLogScale(a.values) ? `${a.name} (log)` : a.name, x, 14);
    ctx.fillStyle = "#666"; ctx.fillText(hi, x, top - 4); ctx.fillText(lo, x, height - bottom + 14);
    ctx.fillStyle = "#333";
  });
}

// x (a param or metric) against y (the chosen metric); one dot per run.
export function scatter(host: HTMLElement, xs: (number | string | undefined)[], ys: (number | undefined)[],
                        xName: string, yName: string, width: number): void {
  const height = 280, pad = 50;
  const ctx = canvas(host, width, height);
  const sx = scaleFor(xs), sy = scaleFor(ys);
  const logX = wantsLogScale(xs), logY = wantsLogScale(ys);
  host.dataset.logAxes = [logX ? "x" : "", logY ? "y" : ""].filter(Boolean).join(",");
  if (logX) xName += " (log)";
  if (logY) yName += " (log)";
  ctx.strokeStyle = "#888"; ctx.beginPath();
  ctx.moveTo(pad, 10); ctx.lineTo(pad, height - pad); ctx.lineTo(width - 10, height - pad); ctx.stroke();
  ctx.fillStyle = "#333"; ctx.textAlign = "center";
  ctx.fillText(xName, (width + pad) / 2, height - 12);
  const [xhi, xlo] = axisLabels(xs), [yhi, ylo] = axisLabels(ys);
  ctx.fillText(xlo, pad, height - pad + 14); ctx.fillText(xhi, width - 30, height - pad + 14);
  ctx.save(); ctx.translate(14, (height - pad) / 2); ctx.rotate(-Math.PI / 2); ctx.fillText(yName, 0, 0); ctx.restore();
  ctx.textAlign = "right"; ctx.fillText(yhi, pad - 4, 18); ctx.fillText(ylo, pad - 4, height - pad);
  xs.forEach((x, i) => {
    const tx = sx(x), ty = sy(ys[i]);
    if (tx === null || ty === null) return;
    ctx.fillStyle = seriesColor(i); ctx.beginPath();
    ctx.arc(pad + 8 + tx * (width - pad - 26), 18 + (1 - ty) * (height - pad - 26), 5, 0, 2 * Math.PI);
    ctx.fill();
  });
}
