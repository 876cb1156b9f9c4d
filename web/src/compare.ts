// Compare view: overlaid curves of the selected runs (smoothing, x by step or
// time), a chart for each of several metrics, parallel coordinates of params
// against the main metric, and a scatter.
import { getRun, history, Run } from "./api";
import { Axis, Curve, lineChart, parallelCoordinates, scatter, smooth } from "./charts";
import { userFirst } from "./columns";
import { contentWidth, el, seriesColor } from "./format";

export class ComparePage {
  private runs: Run[] = [];
  private metric = "";
  private xAxis: "step" | "time" = "step";
  private smoothing = 0;
  private scatterX = "";
  private more: string[] = [];  // metrics charted beside the main one
  private curvesHost = el("div", { class: "charts", id: "compare-curves" });
  private parallelHost = el("div", { id: "compare-parallel" });
  private scatterHost = el("div", { id: "compare-scatter" });
  private morePicker = el("div");
  // metric -> run id -> points
  private histories = new Map<string, Map<string, { step: number; timestamp: number; value: number }[]>>();

  // `metrics`: the metrics to chart (the first is the main one), from the URL.
  constructor(private root: HTMLElement, private runIds: string[], private metrics: string[] = []) {}

  async mount(): Promise<void> {
    if (!this.runIds.length) {
      this.root.append(el("p", { class: "muted" }, "Select runs in a project's table, then Compare selected."));
      return;
    }
    this.runs = await Promise.all(this.runIds.map(getRun));
    const metrics = userFirst(this.runs.flatMap((r) => (r.data.metrics || []).map((m) => m.key)));
    const params = paramKeys(this.runs);
    const asked = this.metrics.filter((m) => metrics.includes(m));
    this.metric = asked[0] || metrics[0] || "";
    this.more = asked.slice(1);
    this.scatterX = params[0] ? `params.${params[0]}` : "";
    const metricSelect = select("compare-metric", metrics, this.metric, (v) => {
      this.metric = v; this.more = this.more.filter((m) => m !== v); this.syncMore(); void this.draw(true);
    });
    this.morePicker = el("div", { class: "picker-list" }, ...metrics.map((m) => {
      const box = el("input", { type: "checkbox", "data-metric": m });
      box.addEventListener("change", () => {
        this.more = box.checked ? userFirst([...this.more, m]).filter((k) => k !== this.metric) : this.more.filter((k) => k !== m);
        void this.draw(true);
      });
      return el("label", {}, box, " " + m);
    }));
    this.syncMore();
    const xSelect = select("compare-x", ["step", "time"], "step", (v) => { this.xAxis = v as "step" | "time"; void this.draw(false); });
    const slider = el("input", { id: "compare-smoothing", type: "range", min: "0", max: "0.99", step: "0.01", value: "0" });
    const sliderValue = el("span", {}, "0");
    slider.addEventListener("input", () => { this.smoothing = Number(slider.value); sliderValue.textContent = slider.value; void this.draw(false); });
    const scatterChoices = [...params.map((p) => `params.${p}`), ...metrics.map((m) => `metrics.${m}`)];
    const scatterSelect = select("scatter-x", scatterChoices, this.scatterX, (v) => { this.scatterX = v; this.drawScatter(); });
    const legend = el("ul", { class: "run-legend", id: "compare-legend" }, ...this.runs.map((r, i) =>
      el("li", { "data-run-id": r.info.run_id, style: `--c:${seriesColor(i)}` },
         el("a", { href: `#/run/${r.info.run_id}` }, r.info.run_name || r.info.run_id))));
    this.root.append(el("h1", {}, `Compare ${this.runs.length} runs`), legend,
      el("div", { class: "toolbar" }, el("label", {}, "Metric ", metricSelect),
         el("details", { class: "picker", id: "compare-more" }, el("summary", {}, "More metrics"), this.morePicker),
         el("label", {}, "x ", xSelect),
         el("label", {}, "Smoothing ", slider, sliderValue)),
      this.curvesHost,
      el("h2", {}, "Parameters against the metric"), this.parallelHost,
      el("h2", {}, "Scatter"), el("div", { class: "toolbar" }, el("label", {}, "x ", scatterSelect), " against the metric (last value)"),
      this.scatterHost);
    await this.draw(true);
  }

  private lastValue(run: Run, metric: string): number | undefined {
    return (run.data.metrics || []).find((m) => m.key === metric)?.value;
  }

  // The "More metrics" boxes as this.more says (the main metric is not one of them).
  private syncMore(): void {
    for (const box of Array.from(this.morePicker.querySelectorAll("input"))) {
      const m = box.dataset.metric!;
      box.checked = this.more.includes(m);
      box.disabled = m === this.metric;
    }
  }

  private async draw(fetch: boolean): Promise<void> {
    if (!this.metric) return;
    const shown = [this.metric, ...this.more];
    if (fetch) {
      for (const metric of shown) {
        if (this.histories.has(metric)) continue;
        const byRun = new Map<string, { step: number; timestamp: number; value: number }[]>();
        // The bulk endpoint takes up to 100 runs per call.
        for (let i = 0; i < this.runIds.length; i += 100) {
          for (const p of await history(this.runIds.slice(i, i + 100), metric, 1000)) {
            (byRun.get(p.run_id!) || byRun.set(p.run_id!, []).get(p.run_id!)!).push(p);
          }
        }
        this.histories.set(metric, byRun);
      }
    }
    this.curvesHost.replaceChildren();
    this.curvesHost.dataset.x = this.xAxis;
    this.curvesHost.dataset.smoothing = String(this.smoothing);
    this.curvesHost.dataset.metrics = shown.join(",");
    // One grid cell each: laid out first, so each chart takes its cell's width.
    const boxes = shown.map((metric) => el("div", { class: "chart", "data-metric": metric }));
    this.curvesHost.append(...boxes);
    shown.forEach((metric, i) => {
      const byRun = this.histories.get(metric) || new Map();
      const curves: Curve[] = this.runs.map((r) => {
        const points = byRun.get(r.info.run_id) || [];
        return {
          label: r.info.run_name || r.info.run_id,
          // uPlot's time scale takes seconds since the epoch.
          xs: points.map((p: { step: number; timestamp: number }) => (this.xAxis === "step" ? p.step : p.timestamp / 1000)),
          ys: smooth(points.map((p: { value: number }) => p.value), this.smoothing),
        };
      });
      // uPlot needs increasing x; time can tie or repeat across steps, so sort each curve.
      for (const c of curves) {
        const order = c.xs.map((_, i) => i).sort((a, b) => c.xs[a] - c.xs[b]);
        c.xs = order.map((i) => c.xs[i]); c.ys = order.map((i) => c.ys[i]);
      }
      lineChart(boxes[i], metric, curves, this.xAxis, Math.max(200, boxes[i].clientWidth - 14));
    });
    const width = Math.min(1600, contentWidth(this.root));
    this.parallelHost.replaceChildren();
    parallelCoordinates(this.parallelHost, parallelAxes(this.runs, this.metric, (r) => this.lastValue(r, this.metric)),
                        width - 2);
    this.drawScatter();
  }

  private drawScatter(): void {
    this.scatterHost.replaceChildren();
    if (!this.scatterX) return;
    const [kind, ...rest] = this.scatterX.split(".");
    const key = rest.join(".");
    const xs = this.runs.map((r) => kind === "params" ? (r.data.params || []).find((p) => p.key === key)?.value
                                                      : this.lastValue(r, key));
    scatter(this.scatterHost, xs, this.runs.map((r) => this.lastValue(r, this.metric)), key, this.metric, 560);
  }
}

// Every param key of the runs, sorted.
export function paramKeys(runs: Run[]): string[] {
  return [...new Set(runs.flatMap((r) => (r.data.params || []).map((p) => p.key)))].sort();
}

// Parallel coordinates' axes: one per param, the metric (value of each run) last.
export function parallelAxes(runs: Run[], metric: string, value: (r: Run) => number | undefined): Axis[] {
  return [...paramKeys(runs).map((k) => ({ name: k, values: runs.map((r) => (r.data.params || []).find((p) => p.key === k)?.value) })),
          { name: metric, values: runs.map(value) }];
}

function select(id: string, options: string[], value: string, onChange: (v: string) => void): HTMLSelectElement {
  const s = el("select", { id }, ...options.map((o) => el("option", { value: o }, o)));
  s.value = value;
  s.addEventListener("change", () => onChange(s.value));
  return s;
}
