// A sweep (#/sweep/ID, ID its tag cohort.sweep.id): the trials table, the
// best-so-far curve, parallel coordinates of the params and the metric, and
// for ASHA/Hyperband the rungs, for PBT the lineage, all from the runs
// `cohort sweep --tracking` records (runs/search and metric history;
// sweep_data.ts works them out).
// While the sweep runs, the page redraws every few seconds.
import { ApiError, get, getRun, history, Metric, Run } from "./api";
import { bestSoFarChart, parallelCoordinates } from "./charts";
import { paramKeys, parallelAxes } from "./compare";
import { contentWidth, el, formatNumber, formatTime, table } from "./format";
import { searchIdentifier } from "./runs_table";
import { lineageView, scheduleTable } from "./lineage_view";
import { bestCompleted, Bracket, bracketsOf, completionOrder, lineageOf, param, Point, SweepSettings, settingsOf, tag, Trial,
         trialsOf } from "./sweep_data";
import { MIN_TRIALS, paramImportances } from "./importance";
import { TrialsTable } from "./trials_table";

// The bulk history endpoint's most points per run; a run that returns this
// many may be downsampled and is read again whole (rungs need every report).
const BULK_POINTS = 2500;
const STATES = ["running", "paused", "completed", "stopped", "failed", "interrupted"];
// Trials listed per rung; the rest are counted (a first rung can hold thousands).
const RUNG_ROWS = 100;
// A running sweep's page reads it again this often (or less, see tick).
const LIVE_REFRESH_MS = 3000;

export class SweepPage {
  private timer = 0;
  private stopped = false;
  private table?: TrialsTable;  // its sort survives a refresh

  constructor(private root: HTMLElement, private id: string) {}

  async mount(): Promise<void> {
    const given = await getRun(this.id);
    const sweepId = tag(given, "cohort.sweep.id");
    if (!sweepId) throw new ApiError(`Run ${this.id} is not part of a sweep (it has no tag cohort.sweep.id)`);
    if (sweepId !== this.id) { location.replace(`#/sweep/${sweepId}`); return; }  // a trial's or a continued run
    if (await this.render(given)) this.schedule(given, LIVE_REFRESH_MS);
  }

  unmount(): void {
    this.stopped = true;  // a refresh still in flight must not draw over the next page
    window.clearTimeout(this.timer);
  }

  private schedule(sweepRun: Run, ms: number): void {
    if (!this.stopped) this.timer = window.setTimeout(() => void this.tick(sweepRun), ms);
  }

  // The next refresh waits at least twice as long as this one took, so a
  // sweep of thousands of trials does not keep the page redrawing. A failed
  // refresh (the server restarting) is skipped; the next one tries again.
  private async tick(sweepRun: Run): Promise<void> {
    const start = performance.now();
    let running = true;
    try {
      running = await this.render(sweepRun);
    } catch {
      // the next refresh tries again
    }
    if (running) this.schedule(sweepRun, Math.max(LIVE_REFRESH_MS, 2 * (performance.now() - start)));
  }

  // Reads the sweep and draws the page afresh; true while the sweep runs.
  private async render(first: Run): Promise<boolean> {
    const sweepId = first.info.run_id;
    const runs = await searchAll(first.info.experiment_id, `${searchIdentifier("tags.cohort.sweep.id")} = '${sweepId}'`);
    const sweepRuns = runs.filter((r) => tag(r, "cohort.sweep.role") === "sweep")
      .sort((a, b) => (a.info.start_time || 0) - (b.info.start_time || 0));
    const trialRuns = runs.filter((r) => tag(r, "cohort.sweep.role") === "trial");
    const s = settingsOf(sweepRuns[0] || first);
    if (!s.metric) throw new ApiError(`The sweep's run ${sweepId} has no param 'metric' (is it a deleted run?)`);
    const [points, best] = await Promise.all([histories(trialRuns, s.metric), histories(sweepRuns, `best_${s.metric}`)]);
    const trials = trialsOf(trialRuns, points, s, Date.now());
    const latest = sweepRuns[sweepRuns.length - 1] || first;
    const width = Math.min(1600, contentWidth(this.root)) - 2;  // less the canvases' borders

    if (this.stopped) return false;
    const [bestHost, drawBest] = this.bestSoFar(s, trials, best, width);
    const params = paramKeys(trials.map((t) => t.latest));
    const pbt = s.algorithm === "pbt";
    this.table = trials.length ? new TrialsTable(trials, params, s.metric, s.maximize, this.table?.sorting(), pbt) : undefined;
    const brackets = bracketsOf(trials, s.maximize);
    this.root.replaceChildren(
      el("h1", {}, `Sweep ${latest.info.run_name?.replace(/ \(continued\)$/, "") || sweepId} `,
         el("span", { class: `badge status-${latest.info.status}`, id: "sweep-status" }, latest.info.status)),
      el("div", { class: "cards" }, card("Sweep", summary(s, sweepRuns, trials)),
         card("Trials", stateCounts(trials, first.info.experiment_id, sweepId))),
      el("h2", {}, "Best so far"), bestHost,
      ...(pbt ? [el("h2", {}, "Lineage"), lineage(s, trials, params, width)] : []),
      el("h2", {}, "Trials"),
      // A wide table scrolls in its own box: the page keeps to the window's width.
      this.table ? el("div", { class: "scroll-x" }, this.table.element) : el("p", { class: "muted", id: "trials" }, "No trial has started yet."),
      el("h2", {}, "Parameter importance"), importanceView(s, trials, params),
      el("h2", {}, "Parameters against the metric"), this.parallel(s, trials, width),
      ...(brackets.length ? [el("h2", {}, "Rungs"), rungsView(brackets, s, trials)] : []));
    drawBest();
    return latest.info.status === "RUNNING";
  }

  // The curve is what the controller recorded (the sweep runs' best_<metric>,
  // one point per completion); the dots are the completed trials' own values.
  private bestSoFar(s: SweepSettings, trials: Trial[], best: Map<string, Point[]>,
                    width: number): [HTMLElement, () => void] {
    const order = completionOrder(trials);
    const byStep = new Map<number, number>();
    for (const list of best.values()) for (const p of list) byStep.set(p.step, p.value);
    const n = Math.max(order.length, ...byStep.keys());
    const bestValues = Array.from({ length: n }, (_, i) => byStep.get(i + 1) ?? null);
    const finals = Array.from({ length: n }, (_, i) => order[i]?.last ?? null);
    const host = el("div", { class: "chart", id: "sweep-best", "data-best": bestValues.join(","),
                             "data-finals": finals.join(","), "data-trials": order.map((t) => t.trial).join(",") });
    if (!n) host.append(el("p", { class: "muted" }, "No trial has completed yet."));
    return [host, () => { if (n) bestSoFarChart(host, s.metric, bestValues, finals, width - 12); }];
  }

  private parallel(s: SweepSettings, trials: Trial[], width: number): HTMLElement {
    const host = el("div", { id: "sweep-parallel" });
    const withValue = trials.filter((t) => t.last !== undefined);
    if (!withValue.length) { host.append(el("p", { class: "muted" }, `No trial has reported ${s.metric} yet.`)); return host; }
    const last = new Map(withValue.map((t) => [t.latest.info.run_id, t.last]));
    // Ranked colours: the best trials stand out whatever their order.
    const ranked = [...withValue].sort((a, b) => (s.maximize ? b.last! - a.last! : a.last! - b.last!));
    const colors = withValue.map((t) => rankColor(ranked.indexOf(t) / Math.max(1, ranked.length - 1)));
    host.append(el("p", { class: "legend" }, el("span", { class: "swatch", style: `--c:${rankColor(0)}` }, `best ${s.metric}`),
                   el("span", { class: "swatch", style: `--c:${rankColor(1)}` }, "worst")));
    parallelCoordinates(host, parallelAxes(withValue.map((t) => t.latest), s.metric, (r) => last.get(r.info.run_id)),
                        width, colors);
    return host;
  }
}

// PBT: who took whose checkpoint when, and the values the best trial's line
// trained with; each trial coloured by the rank of its last value.
function lineage(s: SweepSettings, trials: Trial[], params: string[], width: number): HTMLElement {
  const host = el("div", { id: "sweep-lineage-host" });
  if (!trials.length) { host.append(el("p", { class: "muted" }, "No trial has started yet.")); return host; }
  const l = lineageOf(trials, s.maximize);
  const ranked = trials.filter((t) => t.last !== undefined).sort((a, b) => (s.maximize ? b.last! - a.last! : a.last! - b.last!));
  const rank = new Map(ranked.map((t, i) => [t.trial, i / Math.max(1, ranked.length - 1)]));
  const color = (n: number) => (rank.has(n) ? rankColor(rank.get(n)!) : "#b8bec8");
  const resource = s.resource || "step";
  host.append(
    el("p", { class: "legend" }, el("span", { class: "swatch", style: `--c:${rankColor(0)}` }, `best ${s.metric}`),
       el("span", { class: "swatch", style: `--c:${rankColor(1)}` }, "worst"),
       el("span", { class: "swatch line", style: "--c:var(--fg)" }, l.best === undefined ? "no trial has a value yet"
          : `trial ${l.best} (best) and its ancestors`)),
    el("p", { class: "muted" }, `One row per trial over the ${resource}s it trained; a vertical edge goes from a trial ` +
       `to the one that took its checkpoint and values (perturbed), at that ${resource}. Hover for the values it changed.`),
    lineageView(l, trials, s.metric, s.resource, s.minResource, s.maxResource, width, color));
  if (l.schedule.length) {
    host.append(el("h3", {}, `Schedule of trial ${l.best}: the values its line trained with`),
                scheduleTable(l, trials, params, resource));
  }
  return host;
}

// Each param's share of the spread of the completed trials' final values
// (importance.ts says how, and why that method).
function importanceView(s: SweepSettings, trials: Trial[], params: string[]): HTMLElement {
  const host = el("div", { id: "sweep-importance" });
  const done = trials.filter((t) => t.state === "completed" && t.last !== undefined && isFinite(t.last));
  const got = paramImportances(new Map(params.map((p) => [p, done.map((t) => param(t.latest, p) ?? "")])),
                               done.map((t) => t.last!));
  if (!got) {
    host.append(el("p", { class: "muted" }, `Needs at least ${MIN_TRIALS} completed trials (${done.length} so far).`));
    return host;
  }
  host.append(el("p", { class: "muted" }, `How much of the spread of ${s.metric} over the ${done.length} completed trials ` +
     "each parameter explains on its own (fANOVA's main effect, estimated from the trials: ε² of the trials grouped by " +
     "the parameter), as a share of the sum."),
    el("table", { class: "list importance" }, el("tr", {}, el("th", {}, "Parameter"), el("th", {}, "Share"), el("th", {}, ""),
                                                     el("th", {}, "Variance explained")),
       ...got.map((g) => el("tr", { "data-param": g.param, "data-share": String(g.share), "data-explained": String(g.explained) },
         el("td", {}, g.param), el("td", { class: "num" }, `${(100 * g.share).toFixed(1)} %`),
         el("td", { class: "bar-cell" }, el("div", { class: "bar", style: `width:${(100 * g.share).toFixed(1)}%` })),
         el("td", { class: "num" }, `${(100 * g.explained).toFixed(1)} %`)))));
  return host;
}

// From blue (t = 0, the best) to orange (t = 1, the worst).
function rankColor(t: number): string {
  return `hsl(${Math.round(220 - 190 * t)}, 70%, ${Math.round(38 + 14 * t)}%)`;
}

function card(title: string, body: HTMLElement): HTMLElement {
  return el("section", { class: "card" }, el("h3", {}, title), body);
}

function summary(s: SweepSettings, sweepRuns: Run[], trials: Trial[]): HTMLElement {
  const best = bestCompleted(trials, s.maximize);
  const sweepRun = sweepRuns[0];
  const rows: [string, string | Node][] = [
    ["Algorithm", s.algorithm], ["Metric", `${s.metric} (${s.maximize ? "max" : "min"})`],
    ["Best", best ? el("span", { id: "sweep-best-value" }, `${formatNumber(best.last)} (trial `,
                       el("a", { href: `#/run/${best.latest.info.run_id}` }, String(best.trial)), ")") : "none completed yet"],
  ];
  if (sweepRun && ["asha", "hyperband"].includes(s.algorithm)) {
    rows.push(["Resource", `${s.resource || "resource"} ${s.minResource}–${s.maxResource}, reduction ${s.reduction}`]);
  }
  if (sweepRun) rows.push(["Started", formatTime(sweepRun.info.start_time)]);
  rows.push(["Sweep runs", el("span", { id: "sweep-runs" }, ...sweepRuns.flatMap((r, i) =>
    [i ? ", " : "", el("a", { href: `#/run/${r.info.run_id}` }, r.info.run_name || r.info.run_id)]))]);
  return table(rows, "");
}

function stateCounts(trials: Trial[], experimentId: string, sweepId: string): HTMLElement {
  const rows: [string, string | Node][] = [["Trials", el("span", { id: "trial-count" }, String(trials.length))]];
  for (const state of STATES) {
    const n = trials.filter((t) => t.state === state).length;
    if (n) rows.push([state, el("span", { class: `state state-${state}`, "data-state": state }, String(n))]);
  }
  const filter = `${searchIdentifier("tags.cohort.sweep.id")} = '${sweepId}'`;
  rows.push(["Runs", el("a", { href: `#/p/${experimentId}?filter=${encodeURIComponent(filter)}`, id: "sweep-runs-table" },
                        "in the project's runs table")]);
  return table(rows, "");
}

// One row of rung cards per bracket (Hyperband has several, ASHA one); in each
// rung the trials that reached it, best first, and what became of them there.
function rungsView(brackets: Bracket[], s: SweepSettings, trials: Trial[]): HTMLElement {
  const runOf = new Map(trials.map((t) => [t.trial, t.latest.info.run_id]));
  const resource = s.resource || "resource";
  const host = el("div", { id: "sweep-rungs" });
  brackets.forEach((b, i) => {
    if (brackets.length > 1) host.append(el("h3", {}, `Bracket ${i + 1}: rungs at ${b.rungs.map((r) => r.resource).join(", ")}`));
    const row = el("div", { class: "bracket", "data-bracket": String(i) });
    b.rungs.forEach((rung, k) => {
      const counts = new Map<string, number>();
      for (const e of rung.entries) counts.set(e.outcome, (counts.get(e.outcome) || 0) + 1);
      const list = el("table", { class: "rung-trials" }, ...rung.entries.slice(0, RUNG_ROWS).map((e) =>
        el("tr", { "data-trial": String(e.trial), "data-outcome": e.outcome, "data-value": String(e.value) },
           el("td", {}, el("a", { href: `#/run/${runOf.get(e.trial)}` }, `trial ${e.trial}`)),
           el("td", { class: "num" }, formatNumber(e.value)),
           el("td", {}, el("span", { class: `outcome outcome-${e.outcome}` }, e.outcome)))));
      row.append(el("section", { class: "card rung", "data-resource": String(rung.resource), "data-count": String(rung.entries.length) },
        el("h3", {}, `Rung ${k + 1} · ${resource} ${rung.resource}`),
        el("p", { class: "muted" }, `${rung.entries.length} trial${rung.entries.length === 1 ? "" : "s"}` +
           [...counts].map(([o, n]) => `, ${n} ${o}`).join("")),
        rung.entries.length ? list : el("p", { class: "muted" }, "no trial has reached it"),
        rung.entries.length > RUNG_ROWS ? el("p", { class: "muted" }, `and ${rung.entries.length - RUNG_ROWS} more`) : ""));
    });
    host.append(row);
  });
  host.prepend(el("p", { class: "muted" }, `A trial's value at a rung is its first ${s.metric} reported at or past the rung's resource.`));
  return host;
}

async function searchAll(experimentId: string, filter: string): Promise<Run[]> {
  const out: Run[] = [];
  let token: string | undefined;
  do {
    const page = await get<{ runs?: Run[]; next_page_token?: string }>("runs/search", {
      experiment_ids: [experimentId], filter, max_results: 50000, page_token: token });
    out.push(...(page.runs || []));
    token = page.next_page_token || undefined;
  } while (token);
  return out;
}

// Each run's history of `key`, by run id: the bulk endpoint (100 runs a call),
// and the whole series for a run the bulk answer may have downsampled.
async function histories(runs: Run[], key: string): Promise<Map<string, Point[]>> {
  const out = new Map<string, Point[]>();
  const ids = runs.map((r) => r.info.run_id);
  for (let i = 0; i < ids.length; i += 100) {
    for (const p of await history(ids.slice(i, i + 100), key, BULK_POINTS)) {
      (out.get(p.run_id!) || out.set(p.run_id!, []).get(p.run_id!)!).push(p);
    }
  }
  for (const [id, list] of out) {
    if (list.length < BULK_POINTS) continue;
    out.set(id, (await get<{ metrics?: Metric[] }>("metrics/get-history", { run_id: id, metric_key: key })).metrics || []);
  }
  return out;
}
