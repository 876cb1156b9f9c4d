// One run: overview, params, tags, provenance, metric and system charts that
// follow the run while it is RUNNING, artifacts and the engine's timeline.
import uPlot from "uplot";
import { artifactRoot, artifactUrl, Experiment, get, getRun, history, listArtifacts, post, Run, RunInfo } from "./api";
import { lineChart } from "./charts";
import { MetricGroup, metricGroup, userFirst } from "./columns";
import { parentOf } from "./run_tree";
import { el, formatDuration, formatTime, table } from "./format";
import { tag } from "./sweep_data";
import { timelineView } from "./timeline";

const LIVE_REFRESH_MS = 2000;
const CHART_POINTS = 1000;
const PROVENANCE = /^(cohort\.|mlflow\.source\.|mlflow\.user$)/;

export class RunPage {
  private charts = new Map<string, uPlot>();
  private run?: Run;
  private zoom = new Map<string, [number, number]>();  // a chart's zoomed-in steps
  private timer = 0;
  private stopped = false;

  constructor(private root: HTMLElement, private runId: string) {}

  async mount(): Promise<void> {
    this.stopped = false;
    const run = await getRun(this.runId);
    const info = run.info;
    const project = (await get<{ experiment: Experiment }>("experiments/get", { experiment_id: info.experiment_id })).experiment;
    if (this.stopped) return;
    const tags = run.data.tags || [];
    const title = el("h1", {}, el("span", { id: "run-name" }, info.run_name || info.run_id), " ",
                     el("span", { class: `badge status-${info.status}`, id: "run-status" }, info.status), " ",
                     info.lifecycle_stage === "deleted" ? el("span", { class: "badge deleted", id: "run-deleted" }, "deleted") : "");
    const overview = table([
      ["Run id", info.run_id],
      ["Project", el("a", { href: `#/p/${info.experiment_id}` }, project.name)],
      ["Started", formatTime(info.start_time)], ["Ended", formatTime(info.end_time)],
      ["Duration", formatDuration(info.start_time, info.end_time)],
      ...sweepRow(run),
      ...(parentOf(run) ? [["Parent run", el("a", { href: `#/run/${parentOf(run)}`, id: "parent-run" }, parentOf(run)!)] as [string, Node]] : []),
    ], "");
    const params = table((run.data.params || []).map((p) => [p.key, p.value]), "No params.");
    const provenance = table(tags.filter((t) => PROVENANCE.test(t.key)).map((t) => [t.key, t.value]),
                             "No provenance recorded.");
    const other = table(tags.filter((t) => !PROVENANCE.test(t.key) && t.key !== "mlflow.runName")
                          .map((t) => [t.key, t.value]), "No tags.");
    const children = el("div", { id: "child-runs" });
    const grid = el("div", { class: "cards" },
      card("Overview", overview), card("Params", params), card("Provenance", provenance), card("Tags", other));
    this.root.append(title, this.actions(info), grid,
      children,
      el("h2", {}, "Metrics"), el("div", { class: "charts", id: "metric-charts" }),
      section("engine", "Engine", el("div", { class: "charts", id: "engine-charts" })),
      section("system", "System", el("div", { class: "charts", id: "system-charts" })),
      el("h2", {}, "Artifacts"), el("div", { id: "artifacts" }));
    // A closed section's charts are drawn when it opens (they need its width).
    for (const d of Array.from(this.root.querySelectorAll<HTMLDetailsElement>("details.chart-section"))) {
      d.addEventListener("toggle", () => { if (d.open && this.run) void this.refreshCharts(this.run); });
    }
    window.addEventListener("resize", this.onResize);
    const artifacts = this.root.querySelector("#artifacts") as HTMLElement;
    await this.refreshCharts(run);
    if (this.stopped) return;  // left for another page meanwhile
    void this.showChildren(info, children);
    void this.showArtifacts(run, artifacts);
    if (info.status === "RUNNING") this.timer = window.setInterval(() => void this.tick(), LIVE_REFRESH_MS);
  }

  // Rename, and MLflow's delete (the run leaves the active runs; its data
  // stays) and restore; the page reads the run again after each.
  private actions(info: RunInfo): HTMLElement {
    const error = el("span", { class: "error", id: "run-action-error" });
    const act = async (endpoint: string, body: object) => {
      try { await post(endpoint, { run_id: info.run_id, ...body }); } catch (e) {
        error.textContent = (e as Error).message;
        return;
      }
      this.unmount();
      this.root.replaceChildren();
      this.charts.clear();
      await this.mount();
    };
    const name = el("input", { id: "rename-input", type: "text", size: "32", value: info.run_name || "" });
    const rename = el("form", { id: "rename-form", class: "inline" }, name, el("button", { type: "submit", class: "secondary" }, "Rename"));
    rename.addEventListener("submit", (e) => {
      e.preventDefault();
      if (name.value.trim()) void act("runs/update", { run_name: name.value.trim() });
    });
    const deleted = info.lifecycle_stage === "deleted";
    const lifecycle = el("button", { id: deleted ? "restore-run" : "delete-run", class: "secondary" }, deleted ? "Restore" : "Delete");
    lifecycle.addEventListener("click", () => void act(deleted ? "runs/restore" : "runs/delete", {}));
    return el("div", { class: "toolbar" }, rename, lifecycle, error);
  }

  unmount(): void {
    this.stopped = true;
    window.clearInterval(this.timer);
    window.removeEventListener("resize", this.onResize);
  }

  // Charts take their box's width: the grid gives each box a share of the row.
  private onResize = (): void => {
    for (const chart of this.charts.values()) {
      const box = chart.root.parentElement as HTMLElement;
      if (box.clientWidth) chart.setSize({ width: chartWidth(box), height: chart.height });
    }
  };

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

  // One chart per metric, the user's first; the boxes go in in name order
  // before any history arrives, so the order is the same on every load.
  private async refreshCharts(run: Run): Promise<void> {
    this.run = run;
    const keys = userFirst((run.data.metrics || []).map((m) => m.key));
    const hosts: Record<MetricGroup, HTMLElement> = {
      user: this.root.querySelector("#metric-charts") as HTMLElement,
      engine: this.root.querySelector("#engine-charts") as HTMLElement,
      system: this.root.querySelector("#system-charts") as HTMLElement,
    };
    const empty: Record<MetricGroup, string> = {
      user: "No metrics logged yet.", engine: "No engine metrics (cohort.torch's DistributedOptimizer logs them).",
      system: "No system metrics (logged every 10 s by cohort.track).",
    };
    if (!hosts.user || !hosts.engine || !hosts.system) return;  // the page was left
    for (const group of ["user", "engine", "system"] as MetricGroup[]) {
      const n = keys.filter((k) => metricGroup(k) === group).length;
      const host = hosts[group];
      const details = host.closest("details");
      if (details) (details.querySelector(".count") as HTMLElement).textContent = ` (${n})`;
      if (!n && !host.childElementCount) host.replaceChildren(el("p", { class: "muted" }, empty[group]));
    }
    const boxes = new Map<string, HTMLElement>();
    for (const key of keys) {
      const host = hosts[metricGroup(key)];
      let box = host.querySelector<HTMLElement>(`:scope > .chart[data-metric="${CSS.escape(key)}"]`);
      if (!box) {
        host.querySelector("p.muted")?.remove();
        box = el("div", { class: "chart", "data-metric": key, "data-points": "0" });
        host.append(box);
      }
      boxes.set(key, box);
    }
    // Charts in a closed section wait until it opens.
    const shown = keys.filter((k) => !boxes.get(k)!.closest("details:not([open])"));
    await Promise.all(shown.map(async (key) => {
      const box = boxes.get(key)!;
      const zoomed = this.zoom.get(key);
      const data = await this.series(key, box, zoomed || null);
      const chart = this.charts.get(key);
      if (chart) { chart.setData(data, !zoomed); return; }
      this.charts.set(key, lineChart(box, key, [{ label: key, xs: data[0] as number[], ys: data[1] as number[] }],
                                     "step", chartWidth(box), (range) => {
                                       if (range) this.zoom.set(key, range); else this.zoom.delete(key);
                                       return this.series(key, box, range);
                                     }));
    }));
  }

  // A metric's points over `range` of steps (null: all of them), at most
  // CHART_POINTS: a zoomed-in range comes back in its own detail.
  private async series(key: string, box: HTMLElement, range: [number, number] | null): Promise<uPlot.AlignedData> {
    const points = await history([this.runId], key, CHART_POINTS, range || undefined);
    box.dataset.points = String(points.length);
    box.dataset.zoom = range ? range.join(",") : "";
    box.dataset.steps = points.length ? `${points[0].step},${points[points.length - 1].step}` : "";
    return [points.map((p) => p.step), points.map((p) => p.value)];
  }

  // The runs whose parent this run is (run_tree.ts): MLflow's nested runs,
  // a sweep's trials.
  private async showChildren(info: RunInfo, host: HTMLElement): Promise<void> {
    const found = new Map<string, Run>();
    for (const filter of [`tags.\`mlflow.parentRunId\` = '${info.run_id}'`, `tags.\`cohort.sweep.id\` = '${info.run_id}'`]) {
      const r = await get<{ runs?: Run[] }>("runs/search", { experiment_ids: [info.experiment_id], filter, max_results: 1000,
                                                             order_by: ["attributes.start_time ASC"] });
      for (const child of r.runs || []) if (parentOf(child) === info.run_id) found.set(child.info.run_id, child);
    }
    if (!found.size) return;
    const runs = [...found.values()];
    host.append(el("h2", {}, `Child runs (${runs.length})`), el("p", { class: "child-list" }, ...runs.flatMap((c, i) =>
      [i ? ", " : "", el("a", { href: `#/run/${c.info.run_id}`, "data-run-id": c.info.run_id }, c.info.run_name || c.info.run_id)])));
  }

  private async showArtifacts(run: Run, host: HTMLElement): Promise<void> {
    const root = artifactRoot(run.info);
    let files;
    try { files = await walk(root); } catch (e) {
      host.append(el("p", { class: "muted" }, `Artifacts unavailable: ${(e as Error).message}`));
      return;
    }
    if (!files.length) { host.append(el("p", { class: "muted" }, "No artifacts.")); return; }
    const list = el("ul", { class: "artifacts" });
    const preview = el("div", { id: "artifact-preview" });
    for (const f of files) {
      const name = f.path.slice(root.length + 1);
      const kind = previewKind(name);
      const button = kind ? el("button", { class: "preview-button", "data-path": name }, "Preview") : "";
      if (button) button.addEventListener("click", () => void showPreview(preview, f.path, name, kind!, f.file_size));
      list.append(el("li", {}, el("a", { href: artifactUrl(f.path), download: "" }, name),
                     el("span", { class: "muted" }, ` ${f.file_size ?? ""} bytes `), button));
    }
    host.append(list, preview);
    const trace = files.find((f) => /timeline.*\.json$|\.trace\.json$/.test(f.path));
    if (!trace) return;
    const view = el("div", { class: "timeline", id: "timeline" });
    host.append(el("h2", {}, "Engine timeline"),
      el("p", {}, el("a", { href: artifactUrl(trace.path), download: "" }, "Download the trace"),
         " (opens in Perfetto or chrome://tracing)."), view);
    const text = await (await fetch(artifactUrl(trace.path))).text();
    try { timelineView(view, text, Math.min(1600, view.clientWidth) - 2); } catch (e) {
      view.append(el("p", { class: "error" }, `Cannot read the timeline: ${(e as Error).message}`));
    }
  }
}

// Artifact preview: text, JSON (pretty-printed) and images, shown in the
// page; bigger files are only downloaded.
type PreviewKind = "text" | "json" | "image";
const PREVIEW_MAX_BYTES = 2 << 20;
const TEXT_SHOWN_BYTES = 256 << 10;

export function previewKind(name: string): PreviewKind | undefined {
  const ext = (name.match(/\.([^./]+)$/)?.[1] || "").toLowerCase();
  if (ext === "json") return "json";
  if (["png", "jpg", "jpeg", "gif", "webp", "svg", "bmp"].includes(ext)) return "image";
  if (["txt", "log", "md", "csv", "tsv", "yaml", "yml", "py", "sh", "diff", "patch", "cfg", "ini", "toml", "out", "err"].includes(ext)) {
    return "text";
  }
  return undefined;
}

async function showPreview(host: HTMLElement, path: string, name: string, kind: PreviewKind, size?: number): Promise<void> {
  const head = el("h3", {}, name);
  // data-path names the file once its preview is in (tests wait on it).
  delete host.dataset.path;
  host.dataset.kind = kind;
  host.replaceChildren(head, el("p", { class: "muted" }, "Loading…"));
  // A later click wins over a slower earlier one.
  const ask = String(Number(host.dataset.asked || 0) + 1);
  host.dataset.asked = ask;
  const view = el("div", {});
  await showPreviewOf(view, head, path, name, kind, size);
  if (host.dataset.asked !== ask) return;
  host.replaceChildren(...Array.from(view.childNodes));
  host.dataset.path = name;
}

async function showPreviewOf(host: HTMLElement, head: HTMLElement, path: string, name: string, kind: PreviewKind,
                             size?: number): Promise<void> {
  if (kind !== "image" && (size ?? 0) > PREVIEW_MAX_BYTES) {
    host.replaceChildren(head, el("p", { class: "muted" }, `Too big to preview (${size} bytes): download it.`));
    return;
  }
  if (kind === "image") {
    // An <img> runs no script, an SVG's included.
    host.replaceChildren(head, el("img", { src: artifactUrl(path), alt: name, class: "artifact-image" }));
    return;
  }
  const response = await fetch(artifactUrl(path));
  const text = await response.text();
  if (!response.ok) { host.replaceChildren(head, el("p", { class: "error" }, `Cannot read ${name}: HTTP ${response.status}`)); return; }
  let shown = text;
  if (kind === "json") {
    try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) {
      host.replaceChildren(head, el("p", { class: "error" }, `Not valid JSON: ${(e as Error).message}`),
                           el("pre", { class: "artifact-text" }, text.slice(0, TEXT_SHOWN_BYTES)));
      return;
    }
  }
  const cut = shown.length > TEXT_SHOWN_BYTES;
  host.replaceChildren(head, el("pre", { class: "artifact-text" }, shown.slice(0, TEXT_SHOWN_BYTES)),
                       cut ? el("p", { class: "muted" }, `The first ${TEXT_SHOWN_BYTES} characters; download it for the rest.`) : "");
}

// A sweep's run or trial (cohort sweep --tracking) links to the sweep's page.
function sweepRow(run: Run): [string, Node][] {
  const id = tag(run, "cohort.sweep.id");
  const trial = tag(run, "cohort.sweep.trial");
  if (!id) return [];
  return [["Sweep", el("a", { href: `#/sweep/${id}`, id: "sweep-link" }, trial === undefined ? "the sweep" : `trial ${trial} of the sweep`)]];
}

// The chart's width inside its box (the box's padding is 6 px a side).
function chartWidth(box: HTMLElement): number {
  return Math.max(200, box.clientWidth - 12);
}

// A closed section of cohort's own charts (engine, system), its count beside the title.
function section(id: string, title: string, body: HTMLElement): HTMLElement {
  return el("details", { class: "chart-section", id: `${id}-section` },
            el("summary", {}, el("h2", {}, title, el("span", { class: "count muted" }))), body);
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
