// A simple in-page view of the engine's timeline (Chrome trace JSON array):
// one lane per thread/tensor row, complete and B/E events as bars.
import { el, seriesColor } from "./format";

interface TraceEvent { name?: string; ph?: string; ts?: number; dur?: number; pid?: number; tid?: number; }
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

export function timelineView(host: HTMLElement, text: string, width: number): void {
  const all = bars(parseTrace(text));
  if (!all.length) { host.append(el("p", { class: "muted" }, "The timeline has no duration events.")); return; }
  const lanes = [...new Set(all.map((b) => b.lane))];
  const t0 = Math.min(...all.map((b) => b.start)), t1 = Math.max(...all.map((b) => b.end));
  const laneH = 18, height = lanes.length * laneH + 24;
  const c = el("canvas", { id: "timeline-canvas", title: "engine timeline" });
  c.width = width; c.height = height;
  host.append(c);
  const ctx = c.getContext("2d")!;
  ctx.font = "11px system-ui, sans-serif";
  const names = [...new Set(all.map((b) => b.name))];
  const scale = (width - 10) / Math.max(1, t1 - t0);
  for (const b of all) {
    const y = lanes.indexOf(b.lane) * laneH;
    ctx.fillStyle = seriesColor(names.indexOf(b.name));
    ctx.fillRect(5 + (b.start - t0) * scale, y + 2, Math.max(1, (b.end - b.start) * scale), laneH - 4);
  }
  ctx.fillStyle = "#444";
  ctx.fillText(`${((t1 - t0) / 1000).toFixed(1)} ms, ${all.length} events, ${lanes.length} rows`, 5, height - 6);
  host.append(el("p", { class: "legend" }, ...names.slice(0, 20).map((n, i) =>
    el("span", { class: "swatch", style: `--c:${seriesColor(i)}` }, n))));
}
