// The dashboard's entry point: a hash router over its pages.
import { ApiError, Experiment, get } from "./api";
import { ComparePage } from "./compare";
import { el, formatTime } from "./format";
import { JobPage, QueuePage } from "./queue_page";
import { RunPage } from "./run_page";
import { RunsTable } from "./runs_table";
import { SweepPage } from "./sweep_page";

let current: { unmount?: () => void } | null = null;

async function projectsPage(root: HTMLElement): Promise<void> {
  const r = await get<{ experiments?: Experiment[] }>("experiments/search", { max_results: 1000, order_by: ["last_update_time DESC"] });
  const experiments = r.experiments || [];
  root.append(el("h1", {}, "Projects"));
  if (!experiments.length) { root.append(el("p", { class: "muted" }, "No projects yet: cohort.track.init(project=...) creates one.")); return; }
  const t = el("table", { class: "list", id: "projects" },
               el("tr", {}, el("th", {}, "Project"), el("th", {}, "Id"), el("th", {}, "Created"), el("th", {}, "Last update")));
  for (const e of experiments) {
    t.append(el("tr", { "data-experiment-id": e.experiment_id },
      el("td", {}, el("a", { href: `#/p/${e.experiment_id}` }, e.name)), el("td", {}, e.experiment_id),
      el("td", {}, formatTime(e.creation_time)), el("td", {}, formatTime(e.last_update_time))));
  }
  root.append(t);
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
