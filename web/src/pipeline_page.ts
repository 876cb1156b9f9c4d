// Pipelines (#/pipelines): every pipeline whose controller posted its status,
// with its last run's state; #/pipeline/NAME: its steps as a graph laid out
// by depth (inputs left, dependents right, edges drawn), each box with the
// step's state, its datums' progress, and links to its queue jobs and the
// tracked runs its jobs made; the dataset commits it read and wrote below,
// each a link to its commit view (pipeline_commit_page.ts).
import { getPipeline, listPipelines, PipelineStatus, PipelineStep, Run } from "./api";
import { el, formatTime } from "./format";
import { basename, commitLink, runLinks, trackedRuns } from "./pipeline_commit_page";

const REFRESH_MS = 2000;
const JOBS_SHOWN = 6;
const FAILED_SHOWN = 20;
const SVG = "http://www.w3.org/2000/svg";

function stateBadge(state: string): HTMLElement {
  return el("span", { class: `badge pipeline-state pstate-${state}`, "data-state": state }, state);
}

export class PipelinesPage {
  constructor(private root: HTMLElement) {}

  async mount(): Promise<void> {
    const pipelines = await listPipelines();
    this.root.append(el("h1", {}, "Pipelines"));
    if (!pipelines.length) {
      this.root.append(el("p", { class: "muted" }, "No pipelines yet: `cohort pipeline run SPEC.yaml` with COHORT_SERVER set posts its status here."));
      return;
    }
    const t = el("table", { class: "list", id: "pipelines" },
                 el("tr", {}, ...["Pipeline", "Last run", "Steps", "Updated", "Owner"].map((h) => el("th", {}, h))));
    for (const p of pipelines) {
      const steps = el("span", { class: "step-states" }, ...p.steps.map((s) => el("span", { class: `step-chip pstate-${s.state}`, title: `${s.name}: ${s.state}` }, s.name)));
      t.append(el("tr", { "data-pipeline": p.name, "data-state": p.state },
        el("td", {}, el("a", { href: `#/pipeline/${encodeURIComponent(p.name)}` }, p.name)),
        el("td", {}, stateBadge(p.state)), el("td", {}, steps),
        el("td", {}, formatTime(p.update_time)), el("td", {}, p.owner || "")));
    }
    this.root.append(el("div", { class: "scroll-x" }, t));
  }
}

// Depth of each step: 0 when it reads only datasets, else one more than the deepest step it reads.
export function stepDepths(steps: { name: string; inputs: { step?: string }[] }[]): Map<string, number> {
  const byName = new Map(steps.map((s) => [s.name, s]));
  const depth = new Map<string, number>();
  const visit = (name: string, seen: Set<string>): number => {
    const known = depth.get(name);
    if (known !== undefined) return known;
    const s = byName.get(name);
    if (!s || seen.has(name)) return 0;  // the server checked the graph; guard anyway
    seen.add(name);
    let d = 0;
    for (const i of s.inputs) if (i.step) d = Math.max(d, visit(i.step, seen) + 1);
    depth.set(name, d);
    return d;
  };
  for (const s of steps) visit(s.name, new Set());
  return depth;
}

export class PipelinePage {
  private timer = 0;
  private stopped = false;
  private runs = new Map<string, Run[]>();  // step run token -> tracked runs
  private onResize = () => this.drawEdges();
  private graph = el("div", { class: "dag", id: "dag" });
  private status: PipelineStatus | null = null;

  constructor(private root: HTMLElement, private name: string) {}

  async mount(): Promise<void> {
    window.addEventListener("resize", this.onResize);
    await this.refresh();
  }

  unmount(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
    window.removeEventListener("resize", this.onResize);
  }

  private async refresh(): Promise<void> {
    const { update_time, status } = await getPipeline(this.name);
    if (this.stopped) return;
    await this.findRuns(status);
    if (this.stopped) return;
    this.status = status;
    this.render(status, update_time);
    if (status.state === "running" || status.state === "waiting") {
      this.timer = window.setTimeout(() => void this.refresh().catch(() => undefined), REFRESH_MS);
    }
  }

  // The tracked runs of each step's jobs: tagged cohort.pipeline.run = the
  // step's run token. A running step's jobs may start runs later, so its
  // token is looked up again on each refresh; a failed search shows none.
  private async findRuns(status: PipelineStatus): Promise<void> {
    const tokens = status.steps.filter((s) => s.run && (s.state === "running" || !this.runs.has(s.run))).map((s) => s.run);
    if (!tokens.length) return;
    try {
      for (const [token, runs] of await trackedRuns(tokens)) this.runs.set(token, runs);
    } catch {
      for (const token of tokens) if (!this.runs.has(token)) this.runs.set(token, []);
    }
  }

  private render(status: PipelineStatus, updated: number): void {
    const head = el("div", { class: "toolbar", id: "pipeline-head" }, stateBadge(status.state),
      el("span", { class: "muted" }, status.controller_pid ? `controller pid ${status.controller_pid}` : "no controller running"),
      el("span", { class: "muted" }, `started ${formatTime(status.started * 1000)}`),
      status.ended ? el("span", { class: "muted" }, `ended ${formatTime(status.ended * 1000)}`) : "",
      el("span", { class: "muted" }, `updated ${formatTime(updated)}`));
    const parts: (HTMLElement | string)[] = [el("h1", {}, `Pipeline ${status.pipeline}`), head];
    if (status.error) parts.push(el("p", { class: "error", id: "pipeline-error" }, status.error));
    this.graph.replaceChildren(this.columns(status));
    parts.push(el("div", { class: "dag-scroll" }, this.graph), el("h2", {}, "Datasets and failed datums"), this.details(status));
    this.root.replaceChildren(...parts);
    this.drawEdges();
  }

  private columns(status: PipelineStatus): HTMLElement {
    const depth = stepDepths(status.steps);
    const columns: PipelineStep[][] = [];
    for (const s of status.steps) (columns[depth.get(s.name) || 0] ||= []).push(s);
    return el("div", { class: "dag-columns" },
              ...columns.map((steps, d) => el("div", { class: "dag-column", "data-depth": String(d) }, ...steps.map((s) => this.box(s, status.pipeline)))));
  }

  private box(s: PipelineStep, pipeline: string): HTMLElement {
    const { done, total, failed } = s.datums;
    const pct = total ? Math.round((100 * done) / total) : 0;
    const bar = el("div", { class: "progress", title: `${done} of ${total} datums done` },
                   el("div", { class: "progress-done", style: `width: ${pct}%` }),
                   el("div", { class: "progress-failed", style: `width: ${total ? (100 * failed) / total : 0}%` }));
    const progress = el("div", { class: "datums", "data-done": String(done), "data-total": String(total), "data-failed": String(failed) },
                        `${done}/${total} datums`, failed ? el("span", { class: "failed-count" }, ` · ${failed} failed`) : "");
    const jobs = el("div", { class: "step-jobs" }, "jobs ");
    for (const id of s.jobs.slice(-JOBS_SHOWN)) jobs.append(el("a", { href: `#/queue/${id}`, "data-job": String(id) }, `#${id}`), " ");
    if (s.jobs.length > JOBS_SHOWN) jobs.append(el("span", { class: "muted" }, `(+${s.jobs.length - JOBS_SHOWN} earlier)`));
    if (!s.jobs.length) jobs.append(el("span", { class: "muted" }, "none"));
    const runs = this.runs.get(s.run) || [];
    const tracked = el("div", { class: "step-runs" }, "runs ", ...runLinks(runs));
    const output = !s.output ? el("div", { class: "step-output muted" }, "no output dataset")
                 : s.output_commit ? el("div", { class: "step-output" }, "→ ", commitLink(pipeline, s.output, s.output_commit))
                 : el("div", { class: "step-output", title: s.output }, "→ ", el("code", {}, `${basename(s.output)}@(none yet)`));
    const box = el("div", { class: `dag-step pstate-${s.state}`, "data-step": s.name, "data-state": s.state },
                   el("div", { class: "dag-step-head" }, el("span", { class: "dag-step-name" }, s.name), stateBadge(s.state)),
                   progress, bar, jobs, tracked, output);
    if (s.error) box.append(el("div", { class: "error step-error", title: s.error }, s.error));
    return box;
  }

  private details(status: PipelineStatus): HTMLElement {
    const t = el("table", { class: "list", id: "step-details" },
                 el("tr", {}, ...["Step", "Read", "Wrote", "Failed datums"].map((h) => el("th", {}, h))));
    for (const s of status.steps) {
      const read = el("td", { class: "commits" }, ...s.input_commits.map((i) => el("div", {}, commitLink(status.pipeline, i.location, i.commit))));
      const wrote = el("td", { class: "commits" }, s.output_commit ? commitLink(status.pipeline, s.output, s.output_commit) : "");
      const ids = Object.keys(s.failed_datums);
      const failed = el("td", { class: "failed-datums" }, ...ids.slice(0, FAILED_SHOWN).map((id) => el("div", { "data-datum": id }, `datum ${id}: `, el("span", { class: "muted" }, s.failed_datums[id]))));
      if (ids.length > FAILED_SHOWN) failed.append(el("div", { class: "muted" }, `… ${ids.length - FAILED_SHOWN} more (cohort pipeline status)`));
      t.append(el("tr", { "data-step": s.name }, el("td", {}, s.name), read, wrote, failed));
    }
    return el("div", { class: "scroll-x" }, t);
  }

  // One curve from each input step's box to the box that reads it.
  private drawEdges(): void {
    if (!this.status) return;
    this.graph.querySelector("svg.dag-edges")?.remove();
    const origin = this.graph.getBoundingClientRect();
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "dag-edges");
    svg.setAttribute("width", String(this.graph.scrollWidth));
    svg.setAttribute("height", String(this.graph.scrollHeight));
    const marker = document.createElementNS(SVG, "marker");
    for (const [k, v] of Object.entries({ id: "dag-arrow", viewBox: "0 0 8 8", refX: "8", refY: "4", markerWidth: "8", markerHeight: "8", orient: "auto" })) marker.setAttribute(k, v);
    const tip = document.createElementNS(SVG, "path");
    tip.setAttribute("d", "M0,0 L8,4 L0,8 z");
    marker.append(tip);
    const defs = document.createElementNS(SVG, "defs");
    defs.append(marker);
    svg.append(defs);
    const boxOf = (name: string) => this.graph.querySelector<HTMLElement>(`.dag-step[data-step="${CSS.escape(name)}"]`);
    for (const s of this.status.steps) {
      const to = boxOf(s.name);
      for (const i of s.inputs) {
        const from = i.step ? boxOf(i.step) : null;
        if (!from || !to) continue;
        const a = from.getBoundingClientRect(), b = to.getBoundingClientRect();
        const x1 = a.right - origin.left, y1 = a.top + a.height / 2 - origin.top;
        const x2 = b.left - origin.left, y2 = b.top + b.height / 2 - origin.top;
        const mid = (x1 + x2) / 2;
        const path = document.createElementNS(SVG, "path");
        path.setAttribute("d", `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`);
        path.setAttribute("class", "dag-edge");
        path.setAttribute("data-from", i.step!);
        path.setAttribute("data-to", s.name);
        path.setAttribute("marker-end", "url(#dag-arrow)");
        svg.append(path);
      }
    }
    this.graph.prepend(svg);
  }
}
