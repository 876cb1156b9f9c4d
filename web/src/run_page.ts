// One run: overview, params, tags, provenance, metric and system charts that
// follow the run while it is RUNNING, artifacts and the engine's timeline.
import uPlot from "uplot";
import { artifactRoot, artifactUrl, Experiment, get, getRun, history, listArtifacts, Run } from "./api";
import { lineChart } from "./charts";
import { el, formatDuration, formatTime, table } from "./format";
import { tag } from "./sweep_data";
import { timelineView } from "./timeline";

const LIVE_REFRESH_MS = 2000;
const PROVENANCE = /^(cohort\.|mlflow\.source\.|mlflow\.user$)/;

export class RunPage {
  private charts = new Map<string, uPlot>();
  private timer = 0;

  constructor(private root: HTMLElement, private runId: string) {}

  async mount(): Promise<void> {
    const run = await getRun(this.runId);
    const info = run.info;
    const project = (await get<{ experiment: Experiment }>("experiments/get", { experiment_id: info.experiment_id })).experiment;
    const tags = run.data.tags || [];
    const title = el("h1", {}, info.run_name || info.run_id, " ",
                     el("span", { class: `badge status-${info.status}`, id: "run-status" }, info.status));
    const overview = table([
      ["Run id", info.run_id],
      ["Project", el("a", { href: `#/p/${info.experiment_id}` }, project.name)],
      ["Started", formatTime(info.start_time)], ["Ended", formatTime(info.end_time)],
      ["Duration", formatDuration(info.start_time, info.end_time)],
      ...sweepRow(run),
    ], "");
    const params = table((run.data.params || []).map((p) => [p.key, p.value]), "No params.");
    const provenance = table(tags.filter((t) => PROVENANCE.test(t.key)).map((t) => [t.key, t.value]),
                             "No provenance recorded.");
    const other = table(tags.filter((t) => !PROVENANCE.test(t.key) && t.key !== "mlflow.runName")
                          .map((t) => [t.key, t.value]), "No tags.");
    const grid = el("div", { class: "cards" },
      card("Overview", overview), card("Params", params), card("Provenance", provenance), card("Tags", other));
    this.root.append(title, grid,
      el("h2", {}, "Metrics"), el("div", { class: "charts", id: "metric-charts" }),
      el("h2", {}, "System"), el("div", { class: "charts", id: "system-charts" }),
      el("h2", {}, "Artifacts"), el("div", { id: "artifacts" }));
    await this.refreshCharts(run);
    void this.showArtifacts(run);
    if (info.status === "RUNNING") this.timer = window.setInterval(() => void this.tick(), LIVE_REFRESH_MS);
  }

  unmount(): void { window.clearInterval(this.timer); }

  // A failed poll (the server restarting) is skipped; the next one tries again.
  private async tick(): Promise<void> {
    try {
      const run = await getRun(this.runId);
      const badge = document.getElementById("run-status");
      if (badge) { badge.textContent = run.info.status; badge.className = `badge status-${run.info.status}`; }
      await this.refreshCharts(run);
      if (run.info.status !== "RUNNING") this.unmount();
    } catch {
      return;
    }
  }

  private async refreshCharts(run: Run): Promise<void> {
    const keys = (run.data.metrics || []).map((m) => m.key).sort();
    const metricHost = this.root.querySelector("#metric-charts") as HTMLElement;
    const systemHost = this.root.querySelector("#system-charts") as HTMLElement;
    if (!keys.some((k) => !k.startsWith("system/")) && !metricHost.childElementCount) {
      metricHost.replaceChildren(el("p", { class: "muted" }, "No metrics logged yet."));
    }
    if (!keys.some((k) => k.startsWith("system/")) && !systemHost.childElementCount) {
      systemHost.replaceChildren(el("p", { class: "muted" }, "No system metrics (logged every 10 s by cohort.track)."));
    }
    await Promise.all(keys.map(async (key) => {
      const points = await history([this.runId], key);
      const data: uPlot.AlignedData = [points.map((p) => p.step), points.map((p) => p.value)];
      const chart = this.charts.get(key);
      if (chart) {
        chart.setData(data);
        (chart.root.parentElement as HTMLElement).dataset.points = String(points.length);
        return;
      }
      const host = key.startsWith("system/") ? systemHost : metricHost;
      host.querySelector("p.muted")?.remove();
      const box = el("div", { class: "chart", "data-metric": key, "data-points": String(points.length) });
      host.append(box);
      this.charts.set(key, lineChart(box, key, [{ label: key, xs: data[0] as number[], ys: data[1] as number[] }], "step", 460));
    }));
  }

  private async showArtifacts(run: Run): Promise<void> {
    const host = this.root.querySelector("#artifacts") as HTMLElement;
    const root = artifactRoot(run.info);
    let files;
    try { files = await walk(root); } catch (e) {
      host.append(el("p", { class: "muted" }, `Artifacts unavailable: ${(e as Error).message}`));
      return;
    }
    if (!files.length) { host.append(el("p", { class: "muted" }, "No artifacts.")); return; }
    const list = el("ul", { class: "artifacts" });
    for (const f of files) list.append(el("li", {}, el("a", { href: artifactUrl(f.path), download: "" }, f.path.slice(root.length + 1)),
                                           el("span", { class: "muted" }, ` ${f.file_size ?? ""} bytes`)));
    host.append(list);
    const trace = files.find((f) => /timeline.*\.json$|\.trace\.json$/.test(f.path));
    if (!trace) return;
    const view = el("div", { class: "timeline", id: "timeline" });
    host.append(el("h2", {}, "Engine timeline"),
      el("p", {}, el("a", { href: artifactUrl(trace.path), download: "" }, "Download the trace"),
         " (opens in Perfetto or chrome://tracing)."), view);
    const text = await (await fetch(artifactUrl(trace.path))).text();
    try { timelineView(view, text, Math.min(1240, this.root.clientWidth)); } catch (e) {
      view.append(el("p", { class: "error" }, `Cannot read the timeline: ${(e as Error).message}`));
    }
  }
}

// A sweep's run or trial (cohort sweep --tracking) links to the sweep's page.
function sweepRow(run: Run): [string, Node][] {
  const id = tag(run, "cohort.sweep.id");
  const trial = tag(run, "cohort.sweep.trial");
  if (!id) return [];
  return [["Sweep", el("a", { href: `#/sweep/${id}`, id: "sweep-link" }, trial === undefined ? "the sweep" : `trial ${trial} of the sweep`)]];
}

function card(title: string, body: HTMLElement): HTMLElement {
  return el("section", { class: "card" }, el("h3", {}, title), body);
}

async function walk(dir: string): Promise<{ path: string; file_size?: number }[]> {
  const out: { path: string; file_size?: number }[] = [];
  for (const f of await listArtifacts(dir)) {
    const path = `${dir}/${f.path}`;  // the list names entries relative to dir
    if (f.is_dir) out.push(...await walk(path)); else out.push({ path, file_size: f.file_size });
  }
  return out;
}
