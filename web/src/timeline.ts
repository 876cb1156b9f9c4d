// A simple in-page view of the engine's timeline (Chrome trace JSON array):
// one labelled lane per thread/tensor row (the trace's thread_name and
// process_name metadata when it has them), complete and B/E events as bars,
// a time axis from the first event.
import { el, seriesColor } from "./format";

interface TraceEvent { name?: string; ph?: string; ts?: number; dur?: number; pid?: number; tid?: number;
                      args?: { name?: string }; }
interface Bar { lane: string; name: string; start: number; end: number; }

// The file may lack its closing "]" when a rank died; viewers accept that, so do we.
export function parseTrace(text: string): TraceEvent[] {
  const t = text.trim().replace(/,\s*$/, "");
  const parsed = JSON.parse(t.startsWith("[") && !t.endsWith("]") ? t + "]" : t);
  return Array.isArray(parsed) ? parsed : parsed.traceEvents || [];
}

function bars(events: TraceEvent[]): Bar[] {
  const out: Bar[] = [];
  const open = new Map<string, TraceEvent[]>();
  for (const e of events) {
    const lane = `${e.pid ?? 0}/${e.tid ?? 0}`;
    if (e.ph === "X" && e.ts !== undefined) {
      out.push({ lane, name: e.name || "", start: e.ts, end: e.ts + (e.dur || 0) });
    } else if (e.ph === "B") {
      (open.get(lane) || open.set(lane, []).get(lane)!).push(e);
    } else if (e.ph === "E") {
      const b = open.get(lane)?.pop();
      if (b && b.ts !== undefined && e.ts !== undefined) out.push({ lane, name: b.name || "", start: b.ts, end: e.ts });
    }
  }
  return out;
}

// A lane's label: "<process> · <thread>" from the trace's metadata events
// (ph "M"), else "rank P · thread T" (the engine writes one pid per rank).
export function laneLabels(events: TraceEvent[], lanes: string[]): string[] {
  const processes = new Map<string, string>(), threads = new Map<string, string>();
  for (const e of events) {
    if (e.ph !== "M" || !e.args?.name) continue;
    if (e.name === "process_name") processes.set(String(e.pid ?? 0), e.args.name);
    if (e.name === "thread_name") threads.set(`${e.pid ?? 0}/${e.tid ?? 0}`, e.args.name);
  }
  return lanes.map((lane) => {
    const [pid, tid] = lane.split("/");
    return `${processes.get(pid) ?? `rank ${pid}`} · ${threads.get(lane) ?? `thread ${tid}`}`;
  });
}

// Ticks for a span of `span` µs over about `count` intervals: 1, 2 or 5 times a power of ten.
export function timeTicks(span: number, count: number): number[] {
  if (!(span > 0)) return [0];
  const raw = span / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let t = 0; t <= span + 1e-9; t += step) ticks.push(Math.round(t * 1e6) / 1e6);
  return ticks;
}

// µs since the first event, as the axis shows it.
export function formatMicros(us: number, step: number): string {
  if (step >= 1e6) return `${+(us / 1e6).toFixed(3)} s`;
  if (step >= 1e3) return `${+(us / 1e3).toFixed(3)} ms`;
  return `${+us.toFixed(3)} µs`;
}

export function timelineView(host: HTMLElement, text: string, width: number): void {
  const events = parseTrace(text);
  const all = bars(events);
  if (!all.length) { host.append(el("p", { class: "muted" }, "The timeline has no duration events.")); return; }
  const lanes = [...new Set(all.map((b) => b.lane))].sort((a, b) => {
    const [pa, ta] = a.split("/").map(Number), [pb, tb] = b.split("/").map(Number);
    return pa - pb || ta - tb || (a < b ? -1 : 1);
  });
  const labels = laneLabels(events, lanes);
  const t0 = Math.min(...all.map((b) => b.start)), t1 = Math.max(...all.map((b) => b.end));
  const laneH = 18, axisH = 22, top = 4;
  const height = top + lanes.length * laneH + axisH + 16;
  const c = el("canvas", { id: "timeline-canvas", title: "engine timeline" });
  const dpr = window.devicePixelRatio || 1;
  c.width = width * dpr; c.height = height * dpr;
  c.style.width = `${width}px`; c.style.height = `${height}px`;
  host.append(c);
  const ctx = c.getContext("2d")!;
  ctx.scale(dpr, dpr);
  ctx.font = "11px system-ui, sans-serif";
  // The labels' gutter: as wide as the longest label, at most a quarter of the width.
  const gutter = Math.min(width / 4, Math.max(...labels.map((l) => ctx.measureText(l).width)) + 12);
  const plotLeft = gutter + 4, plotWidth = Math.max(10, width - plotLeft - 12);
  const x = (t: number) => plotLeft + (t - t0) * plotWidth / Math.max(1, t1 - t0);
  const names = [...new Set(all.map((b) => b.name))];
  lanes.forEach((_, i) => {
    if (i % 2) { ctx.fillStyle = "#f4f6f9"; ctx.fillRect(0, top + i * laneH, width, laneH); }
  });
  for (const b of all) {
    const y = top + lanes.indexOf(b.lane) * laneH;
    ctx.fillStyle = seriesColor(names.indexOf(b.name));
    ctx.fillRect(x(b.start), y + 2, Math.max(1, x(b.end) - x(b.start)), laneH - 4);
  }
  ctx.fillStyle = "#333"; ctx.textAlign = "right"; ctx.textBaseline = "middle";
  labels.forEach((l, i) => {
    let shown = l;
    while (shown.length > 3 && ctx.measureText(shown).width > gutter - 8) shown = shown.slice(0, -2) + "…";
    ctx.fillText(shown, gutter - 4, top + i * laneH + laneH / 2);
  });
  // The time axis under the lanes.
  const axisY = top + lanes.length * laneH + 2;
  const ticks = timeTicks(t1 - t0, Math.max(2, Math.floor(plotWidth / 90)));
  const step = ticks.length > 1 ? ticks[1] - ticks[0] : t1 - t0;
  ctx.strokeStyle = "#888"; ctx.lineWidth = 1; ctx.beginPath();
  ctx.moveTo(plotLeft, axisY + 0.5); ctx.lineTo(plotLeft + plotWidth, axisY + 0.5); ctx.stroke();
  ctx.fillStyle = "#555"; ctx.textBaseline = "top";
  const tickLabels = ticks.map((t) => formatMicros(t, step));
  ticks.forEach((t, i) => {
    const tx = x(t0 + t);
    ctx.beginPath(); ctx.moveTo(tx + 0.5, axisY); ctx.lineTo(tx + 0.5, axisY + 4); ctx.stroke();
    ctx.textAlign = i === 0 ? "left" : tx > plotLeft + plotWidth - 30 ? "right" : "center";
    ctx.fillText(tickLabels[i], tx, axisY + 6);
  });
  ctx.textAlign = "left"; ctx.textBaseline = "alphabetic";
  ctx.fillText(`${((t1 - t0) / 1000).toFixed(1)} ms from the first event, ${all.length} events, ${lanes.length} rows`,
               4, height - 2);
  host.dataset.lanes = labels.join("|");
  host.dataset.ticks = tickLabels.join("|");
  host.append(el("p", { class: "legend" }, ...names.slice(0, 20).map((n, i) =>
    el("span", { class: "swatch", style: `--c:${seriesColor(i)}` }, n))));
}
