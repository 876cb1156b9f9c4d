// The dashboard's entry point: a hash router over its pages.
import { ApiError, Experiment, get } from "./api";
import { ComparePage } from "./compare";
import { el, formatTime } from "./format";
import { PipelineCommitPage } from "./pipeline_commit_page";
import { PipelinePage, PipelinesPage } from "./pipeline_page";
import { JobPage, QueuePage } from "./queue_page";
import { RunPage } from "./run_page";
import { RunsTable } from "./runs_table";
import { SweepPage } from "./sweep_page";

let current: { unmount?: () => void } | null = null;

interface Activity { experiment_id: string; runs: number; running: number; finished: number; failed: number;
                    killed: number; last_activity_time: number; }

// Every project with its active runs (how many run, failed) and when
// anything last happened in it (a run started or ended, a metric was
// logged; experiments/activity), most recent first.
async function projectsPage(root: HTMLElement): Promise<void> {
  const r = await get<{ experiments?: Experiment[] }>("experiments/search", { max_results: 1000, order_by: ["last_update_time DESC"] });
  const experiments = r.experiments || [];
  root.append(el("h1", {}, "Projects"));
  if (!experiments.length) { root.append(el("p", { class: "muted" }, "No projects yet: cohort.track.init(project=...) creates one.")); return; }
  const activity = new Map<string, Activity>();
  const a = await get<{ experiments?: Activity[] }>("experiments/activity", { experiment_ids: experiments.map((e) => e.experiment_id) });
  for (const x of a.experiments || []) activity.set(x.experiment_id, x);
  const last = (e: Experiment) => Math.max(e.last_update_time || 0, activity.get(e.experiment_id)?.last_activity_time || 0);
  experiments.sort((x, y) => last(y) - last(x));
  const t = el("table", { class: "list", id: "projects" },
               el("tr", {}, el("th", {}, "Project"), el("th", {}, "Runs"), el("th", {}, "Last activity"), el("th", {}, "Created"),
                  el("th", {}, "Id")));
  for (const e of experiments) {
    const x = activity.get(e.experiment_id);
    const detail = x ? [x.running ? `${x.running} running` : "", x.failed ? `${x.failed} failed` : ""].filter(Boolean).join(", ") : "";
    t.append(el("tr", { "data-experiment-id": e.experiment_id },
      el("td", {}, el("a", { href: `#/p/${e.experiment_id}` }, e.name)),
      el("td", { class: "num", "data-col": "runs", "data-running": String(x?.running ?? 0), "data-failed": String(x?.failed ?? 0) },
         String(x?.runs ?? 0), detail ? el("span", { class: "muted" }, ` (${detail})`) : ""),
      el("td", { "data-col": "last", "data-time": String(last(e)) }, formatTime(last(e))),
      el("td", {}, formatTime(e.creation_time)), el("td", {}, e.experiment_id)));
  }
  root.append(el("div", { class: "scroll-x" }, t));
}

async function route(): Promise<void> {
  current?.unmount?.();
  current = null;
  const root = document.getElementById("app")!;
  root.replaceChildren();
  const crumbs = document.getElementById("crumbs")!;
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean);
  const params = new URLSearchParams(query || "");
  try {
    if (parts[0] === "p" && parts[1]) {
      const e = (await get<{ experiment: Experiment }>("experiments/get", { experiment_id: parts[1] })).experiment;
      crumbs.replaceChildren(el("a", { href: "#/" }, "Projects"), " / ", e.name);
      root.append(el("h1", {}, e.name));
      await new RunsTable(root, parts[1], params.get("filter") || "").mount();
    } else if (parts[0] === "run" && parts[1]) {
      crumbs.replaceChildren(el("a", { href: "#/" }, "Projects"), " / run");
      const page = new RunPage(root, parts[1]);
      current = page;
      await page.mount();
    } else if (parts[0] === "sweep" && parts[1]) {
      crumbs.replaceChildren(el("a", { href: "#/" }, "Projects"), " / sweep");
      const page = new SweepPage(root, parts[1]);
      current = page;
      await page.mount();
    } else if (parts[0] === "queue" && parts[1]) {
      crumbs.replaceChildren(el("a", { href: "#/queue" }, "Queue"), ` / job ${parts[1]}`);
      const page = new JobPage(root, Number(parts[1]));
      current = page;
      await page.mount();
    } else if (parts[0] === "queue") {
      crumbs.replaceChildren("Queue");
      const page = new QueuePage(root);
      current = page;
      await page.mount();
    } else if (parts[0] === "pipeline" && parts[1] && parts[2] === "commit" && parts[3]) {
      const name = decodeURIComponent(parts[1]);
      crumbs.replaceChildren(el("a", { href: "#/pipelines" }, "Pipelines"), " / ",
                             el("a", { href: `#/pipeline/${encodeURIComponent(name)}` }, name), " / commit");
      await new PipelineCommitPage(root, name, decodeURIComponent(parts[3])).mount();
    } else if (parts[0] === "pipeline" && parts[1]) {
      const name = decodeURIComponent(parts[1]);
      crumbs.replaceChildren(el("a", { href: "#/pipelines" }, "Pipelines"), ` / ${name}`);
      const page = new PipelinePage(root, name);
      current = page;
      await page.mount();
    } else if (parts[0] === "pipelines") {
      crumbs.replaceChildren("Pipelines");
      await new PipelinesPage(root).mount();
    } else if (parts[0] === "compare") {
      crumbs.replaceChildren(el("a", { href: "#/" }, "Projects"), " / compare");
      await new ComparePage(root, (params.get("runs") || "").split(",").filter(Boolean),
                            (params.get("metrics") || "").split(",").filter(Boolean)).mount();
    } else {
      crumbs.replaceChildren();
      await projectsPage(root);
    }
  } catch (e) {
    const message = e instanceof ApiError ? e.message : String(e);
    root.append(el("p", { class: "error", id: "page-error" }, message));
  }
}

window.addEventListener("hashchange", () => void route());
void route();
