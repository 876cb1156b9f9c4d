// #/pipeline/NAME/commit/ID: one dataset commit of a pipeline, from the
// provenance records its controller posts with its status document (the
// server does not read datasets): where it is, the step and run that made
// it, its input commits (each a link to its own record when this pipeline
// made it, else marked raw), the code version, the params, the queue jobs
// and the commits made from it; provenance walked back one click at a time, as `cohort pipeline
// provenance` does on the command line. Also the commit links the graph
// page uses.
import { Experiment, get, getPipeline, PipelineCommitRecord, PipelineStatus, Run } from "./api";
import { el, formatTime } from "./format";

export function basename(location: string): string {
  const parts = location.replace(/\/+$/, "").split("/");
  return parts[parts.length - 1] || location;
}

// A link to a commit's view, shown as DATASET@SHORT_ID (the full name in its title).
export function commitLink(pipeline: string, location: string, commit: string): HTMLElement {
  return el("a", { class: "commit-link", href: `#/pipeline/${encodeURIComponent(pipeline)}/commit/${encodeURIComponent(commit)}`,
                   title: `${location}@${commit}`, "data-commit": commit },
            el("code", {}, `${basename(location)}@${commit.slice(0, 12)}`));
}

// The tracked runs of step run tokens: runs tagged cohort.pipeline.run =
// the token, in any experiment. A failed search leaves a token out.
export async function trackedRuns(tokens: string[]): Promise<Map<string, Run[]>> {
  const found = new Map<string, Run[]>();
  const r = await get<{ experiments?: Experiment[] }>("experiments/search", { max_results: 1000 });
  const ids = (r.experiments || []).map((e) => e.experiment_id);
  for (const token of tokens) {
    if (!ids.length) { found.set(token, []); continue; }
    const runs = await get<{ runs?: Run[] }>("runs/search", {
      experiment_ids: ids, max_results: 100, filter: `tags.\`cohort.pipeline.run\` = '${token.replace(/'/g, "")}'` });
    found.set(token, runs.runs || []);
  }
  return found;
}

export function runLinks(runs: Run[]): HTMLElement[] {
  return runs.length ? runs.map((r) => el("a", { href: `#/run/${r.info.run_id}`, "data-run": r.info.run_id }, r.info.run_name || r.info.run_id.slice(0, 8)))
                     : [el("span", { class: "muted" }, "none")];
}

function row(label: string, id: string, ...value: (Node | string)[]): HTMLElement {
  return el("tr", {}, el("th", {}, label), el("td", { id }, ...value));
}

export class PipelineCommitPage {
  constructor(private root: HTMLElement, private pipeline: string, private commit: string) {}

  async mount(): Promise<void> {
    const { status } = await getPipeline(this.pipeline);
    const records = status.commits || [];
    // The latest record wins: a commit a later run named again has that run's jobs.
    const record = [...records].reverse().find((r) => r.output_commit === this.commit);
    const location = record ? record.output : this.locationOf(status);
    const view = el("div", { id: "commit-view", "data-commit": this.commit, "data-made": record ? "yes" : "no" });
    this.root.replaceChildren(el("h1", {}, `Commit ${basename(location || "?")}@${this.commit.slice(0, 12)}`), view);
    const facts = el("table", { class: "kv", id: "commit-facts" },
                     row("Dataset", "commit-location", el("code", {}, location || "(not named in the status document)")),
                     row("Commit", "commit-id", el("code", {}, this.commit)));
    view.append(facts);
    if (!record) {
      view.append(el("p", { class: "muted", id: "commit-missing" }, this.missing(status, location)));
      return;
    }
    let runs: Run[] = [];
    try { runs = (await trackedRuns([record.run])).get(record.run) || []; } catch { /* none shown */ }
    const code = record.code;
    facts.append(
      row("Made by", "commit-step", "step ", el("a", { href: `#/pipeline/${encodeURIComponent(this.pipeline)}`, "data-step": record.step }, record.step),
          record.time ? el("span", { class: "muted" }, ` at ${formatTime(record.time * 1000)}`) : ""),
      row("Step run", "commit-run", el("code", {}, record.run || "?"), " · tracked runs ", ...runLinks(runs)),
      row("Code", "commit-code", !code || !code.git_commit ? el("span", { class: "muted" }, "not in git")
          : el("code", {}, code.git_commit.slice(0, 12) + (code.dirty ? ` + diff ${code.diff_sha256.slice(0, 12)}` : ""))),
      row("Command", "commit-command", el("code", {}, (record.command || []).join(" "))),
      row("Params", "commit-params", el("pre", {}, JSON.stringify(record.params || {}, null, 1))),
      row("Jobs", "commit-jobs", ...(record.jobs.length ? record.jobs.flatMap((id) => [el("a", { href: `#/queue/${id}`, "data-job": String(id) }, `#${id}`), " "])
                                                        : [el("span", { class: "muted" }, "none")])));
    view.append(el("h2", {}, "Made from"), this.inputs(status, record), el("h2", {}, "Used by"), this.uses(status, record));
  }

  // The records kept that read this commit: what to re-run if it is bad.
  private uses(status: PipelineStatus, record: PipelineCommitRecord): HTMLElement {
    const readers = (status.commits || []).filter((r) => r.inputs.some((i) => i.location === record.output && i.commit === record.output_commit));
    const list = el("ul", { id: "commit-uses" }, ...readers.map((r) =>
      el("li", { "data-commit": r.output_commit }, commitLink(this.pipeline, r.output, r.output_commit), ` by step ${r.step}`)));
    if (!readers.length) list.append(el("li", { class: "muted" }, "no later commit of this pipeline read it"));
    return list;
  }

  private inputs(status: PipelineStatus, record: PipelineCommitRecord): HTMLElement {
    const outputs = new Map(status.steps.filter((s) => s.output).map((s) => [s.output, s.name]));
    const t = el("table", { class: "list", id: "commit-inputs" },
                 el("tr", {}, ...["Input", "Commit", "Made by"].map((h) => el("th", {}, h))));
    for (const i of record.inputs) {
      const made = (status.commits || []).some((r) => r.output === i.location && r.output_commit === i.commit);
      const step = outputs.get(i.location);
      const by = made ? el("span", {}, "step ", el("strong", {}, step || "?"))
               : step ? el("span", { class: "muted" }, `step ${step}; its record is older than the ${(status.commits || []).length} kept`)
               : el("span", { class: "muted raw-input" }, "raw input, not made by this pipeline");
      t.append(el("tr", { "data-input": i.name, "data-commit": i.commit, "data-made": made ? "yes" : "no" },
                  el("td", { class: "input-name" }, i.name + (i.split ? " (split)" : "")),
                  el("td", {}, made ? commitLink(this.pipeline, i.location, i.commit) : el("code", { class: "raw-commit", title: `${i.location}@${i.commit}` }, `${basename(i.location)}@${i.commit.slice(0, 12)}`)),
                  el("td", {}, by)));
    }
    if (!record.inputs.length) t.append(el("tr", {}, el("td", { colspan: "3", class: "muted" }, "no inputs")));
    return el("div", { class: "scroll-x" }, t);
  }

  // Where a commit without a record was seen: a step read it, or wrote it before the records kept.
  private locationOf(status: PipelineStatus): string {
    for (const s of status.steps) {
      if (s.output_commit === this.commit) return s.output;
      for (const i of s.input_commits) if (i.commit === this.commit) return i.location;
    }
    return "";
  }

  private missing(status: PipelineStatus, location: string): string {
    if (!location) return "This pipeline's status document names no such commit.";
    if (!status.commits) return "No provenance record: this pipeline's controller posts none (a version older than this view).";
    if (status.steps.some((s) => s.output === location))
      return `No provenance record: the status document keeps the latest ${(status.commits || []).length} output commits' records ` +
             "(older ones: cohort pipeline provenance SPEC.yaml LOCATION@COMMIT).";
    return "Raw input, not made by this pipeline: it has no provenance record.";
  }
}
