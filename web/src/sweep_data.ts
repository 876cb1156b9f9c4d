// What the sweep page shows, worked out from the runs `cohort sweep
// --tracking` records (docs/sweeps.md): trials from their runs, the
// best-so-far curve, the ASHA/Hyperband rungs and PBT's lineage. Pure
// functions, no DOM.
import { Run } from "./api";

export interface Point { step: number; value: number; timestamp: number; }

export interface Trial {
  trial: number;
  runs: Run[];   // oldest first: a trial started again after a restart has a new run
  latest: Run;   // its state, status and params
  state: string; // cohort.sweep.state
  points: Point[];  // the metric's history: its runs in order, each by step
  last?: number;
  best?: number;
  steps?: number;     // the last step (resource) it reported the metric at
  durationS: number;  // wall time of its runs (an ASHA pause keeps the run open, so it counts)
  rungs: number[];    // its bracket's rung resources; empty when the algorithm has none
  parent?: number;    // PBT: the trial whose checkpoint (and values, perturbed) it started from
  forkStep?: number;  // PBT: that checkpoint's step
}

export interface SweepSettings {
  metric: string; maximize: boolean; algorithm: string; resource: string;
  minResource: number; maxResource: number; reduction: number;
}

export type Outcome = "promoted" | "paused" | "stopped" | "completed" | "failed" | "interrupted" | "running";

export interface RungEntry { trial: number; value: number; step: number; outcome: Outcome; }
export interface Rung { resource: number; entries: RungEntry[]; }  // entries best first
export interface Bracket { rungs: Rung[]; }

export function tag(run: Run, key: string): string | undefined {
  return (run.data.tags || []).find((t) => t.key === key)?.value;
}

export function param(run: Run, key: string): string | undefined {
  return (run.data.params || []).find((p) => p.key === key)?.value;
}

export function settingsOf(sweepRun: Run): SweepSettings {
  const num = (k: string) => Number(param(sweepRun, k) || 0);
  return {
    metric: param(sweepRun, "metric") || "", maximize: param(sweepRun, "mode") === "max",
    algorithm: param(sweepRun, "algorithm") || "", resource: param(sweepRun, "resource") || "", minResource: num("min_resource"),
    maxResource: num("max_resource"), reduction: num("reduction"),
  };
}

// As AshaBracket (src/sweep/asha.cc): first, first*eta, ... and max last.
export function bracketResources(first: number, max: number, eta: number): number[] {
  if (!(first > 0) || !(eta >= 2) || !(max >= first)) return [];
  const out: number[] = [];
  for (let r = first; r < max; r *= eta) out.push(r);
  out.push(max);
  return out;
}

// The tag cohort.sweep.rungs ("1,3,9": increasing whole numbers, else
// ignored); sweeps recorded before it existed fall back to ASHA's one
// bracket, which the sweep run's params give.
function rungsOf(run: Run, s: SweepSettings): number[] {
  const parts = (tag(run, "cohort.sweep.rungs") || "").split(",");
  if (parts.every((p) => /^\d+$/.test(p))) {
    const rungs = parts.map(Number);
    if (rungs.every((r, i) => i === 0 || r > rungs[i - 1])) return rungs;
  }
  return s.algorithm === "asha" ? bracketResources(s.minResource, s.maxResource, s.reduction) : [];
}

// PBT's tags cohort.sweep.clone_of and cohort.sweep.clone_step (whole
// numbers, else ignored). Sweeps recorded before clone_step: the step before
// the trial's first report, where a replacement that resumes the checkpoint
// goes on from.
function cloneOf(run: Run, points: Point[]): { parent?: number; forkStep?: number } {
  const parent = tag(run, "cohort.sweep.clone_of") || "", step = tag(run, "cohort.sweep.clone_step") || "";
  if (!/^\d+$/.test(parent)) return {};
  if (/^\d+$/.test(step)) return { parent: Number(parent), forkStep: Number(step) };
  return { parent: Number(parent), forkStep: points.length ? Math.max(0, Math.min(...points.map((p) => p.step)) - 1) : 0 };
}

export function better(a: number, b: number, maximize: boolean): boolean {
  return maximize ? a > b : a < b;
}

// One trial per cohort.sweep.trial tag; `history` maps run id to the metric's points.
export function trialsOf(trialRuns: Run[], history: Map<string, Point[]>, s: SweepSettings,
                         now: number): Trial[] {
  const byTrial = new Map<number, Run[]>();
  for (const r of trialRuns) {
    const text = tag(r, "cohort.sweep.trial") || "";
    if (!/^\d+$/.test(text)) continue;
    const n = Number(text);
    (byTrial.get(n) || byTrial.set(n, []).get(n)!).push(r);
  }
  const trials: Trial[] = [];
  for (const [n, runs] of byTrial) {
    runs.sort((a, b) => (a.info.start_time || 0) - (b.info.start_time || 0));
    const latest = runs[runs.length - 1];
    // Run after run, not merged by step: a trial started again from scratch
    // reports low steps again, and ASHA decided each rung on the first report.
    const points = runs.flatMap((r) => [...(history.get(r.info.run_id) || [])]
      .sort((a, b) => a.step - b.step || a.timestamp - b.timestamp));
    let best: number | undefined;
    for (const p of points) if (isFinite(p.value) && (best === undefined || better(p.value, best, s.maximize))) best = p.value;
    const durationS = runs.reduce((sum, r) =>
      sum + Math.max(0, ((r.info.end_time || now) - (r.info.start_time || now)) / 1000), 0);
    trials.push({
      trial: n, runs, latest, state: tag(latest, "cohort.sweep.state") || "", points,
      last: points.length ? points[points.length - 1].value : undefined, best,
      steps: points.length ? Math.max(...points.map((p) => p.step)) : undefined, durationS, rungs: rungsOf(latest, s),
      ...cloneOf(latest, points),
    });
  }
  return trials.sort((a, b) => a.trial - b.trial);
}

// Completed trials in the order they completed (x = 1, 2, ...), with their
// final values; the sweep run's best_<metric> has one point per completion.
export function completionOrder(trials: Trial[]): Trial[] {
  return trials.filter((t) => t.state === "completed" && t.last !== undefined)
    .sort((a, b) => (a.latest.info.end_time || 0) - (b.latest.info.end_time || 0) || a.trial - b.trial);
}

// The best completed trial (the lowest-numbered among equals, as `cohort
// sweep` and Study::Best name it); undefined when none has completed.
export function bestCompleted(trials: Trial[], maximize: boolean): Trial | undefined {
  const byNumber = [...completionOrder(trials)].sort((a, b) => a.trial - b.trial);
  return byNumber.reduce<Trial | undefined>((b, t) => (!b || better(t.last!, b.last!, maximize) ? t : b), undefined);
}

// The rungs a trial reached, as ASHA saw them: its reports in the order it
// made them, the first at or past each rung's resource counting for that rung
// (one rung per report); every rung but the last it reached promoted it, and
// so did the last when it reported again after it.
export function rungEntries(t: Trial): { rung: number; point: Point; entry: RungEntry }[] {
  const out: { rung: number; point: Point; entry: RungEntry }[] = [];
  let k = 0;
  for (const p of t.points) {
    if (k >= t.rungs.length) break;
    if (p.step < t.rungs[k]) continue;
    out.push({ rung: k, point: p, entry: { trial: t.trial, value: p.value, step: p.step, outcome: "promoted" } });
    k++;
  }
  if (!out.length) return out;
  const last = out[out.length - 1];
  const after = t.points.indexOf(last.point) < t.points.length - 1;
  if (last.rung === t.rungs.length - 1 || (!after && t.state !== "running")) last.entry.outcome = stateOutcome(t.state);
  return out;
}

function stateOutcome(state: string): Outcome {
  const known: Outcome[] = ["paused", "stopped", "completed", "failed", "interrupted", "running"];
  return known.includes(state as Outcome) ? state as Outcome : "running";
}

// Trials grouped by bracket (same rung resources), brackets by first rung.
export function bracketsOf(trials: Trial[], maximize: boolean): Bracket[] {
  const byRungs = new Map<string, Trial[]>();
  for (const t of trials) {
    if (!t.rungs.length) continue;
    const key = t.rungs.join(",");
    (byRungs.get(key) || byRungs.set(key, []).get(key)!).push(t);
  }
  const brackets: Bracket[] = [];
  for (const members of byRungs.values()) {
    const rungs: Rung[] = members[0].rungs.map((resource) => ({ resource, entries: [] }));
    for (const t of members) for (const { rung, entry } of rungEntries(t)) rungs[rung].entries.push(entry);
    for (const r of rungs) r.entries.sort((a, b) => (maximize ? b.value - a.value : a.value - b.value) || a.trial - b.trial);
    brackets.push({ rungs });
  }
  return brackets.sort((a, b) => a.rungs[0].resource - b.rungs[0].resource);
}

// PBT's family tree: one row per trial, each under its parent (children in
// the order they forked off), a trial's row spanning the steps it trained
// (from its fork step, or 0, to its last report), an edge from parent to
// child at the fork step, and the best trial's line of ancestors.
export interface LineageRow { trial: number; depth: number; from: number; to: number; }
export interface LineageEdge { parent: number; child: number; step: number; }
export interface ScheduleEntry { trial: number; from: number; to: number; params: Record<string, string>; }
export interface Lineage {
  rows: LineageRow[];
  edges: LineageEdge[];
  best?: number;          // the best completed trial (bestCompleted), else the best last value
  ancestry: number[];     // the best trial and its ancestors, best first
  schedule: ScheduleEntry[];  // the values the best trial's line trained with, first segment first
}

export function lineageOf(trials: Trial[], maximize: boolean): Lineage {
  const byId = new Map(trials.map((t) => [t.trial, t]));
  // A parent must be an earlier trial that is there (a store missing runs, or odd tags, must not loop).
  const parentOf = (t: Trial) => (t.parent !== undefined && t.parent < t.trial && byId.has(t.parent) ? t.parent : undefined);
  const children = new Map<number, Trial[]>();
  const roots: Trial[] = [];
  for (const t of trials) {
    const p = parentOf(t);
    if (p === undefined) roots.push(t);
    else (children.get(p) || children.set(p, []).get(p)!).push(t);
  }
  const from = (t: Trial) => (parentOf(t) === undefined ? 0 : t.forkStep ?? 0);
  const rows: LineageRow[] = [];
  const edges: LineageEdge[] = [];
  const visit = (t: Trial, depth: number) => {
    rows.push({ trial: t.trial, depth, from: from(t), to: Math.max(from(t), t.steps ?? from(t)) });
    const kids = (children.get(t.trial) || []).sort((a, b) => from(a) - from(b) || a.trial - b.trial);
    for (const k of kids) {
      edges.push({ parent: t.trial, child: k.trial, step: from(k) });
      visit(k, depth + 1);
    }
  };
  for (const r of roots.sort((a, b) => a.trial - b.trial)) visit(r, 0);

  const best = bestCompleted(trials, maximize) || trials.filter((t) => t.last !== undefined)
    .reduce<Trial | undefined>((b, t) => (!b || better(t.last!, b.last!, maximize) ? t : b), undefined);
  const ancestry: number[] = [];
  for (let t = best; t; t = byId.get(parentOf(t) ?? -1)) ancestry.push(t.trial);
  const schedule = [...ancestry].reverse().map((n, i, line): ScheduleEntry => {
    const t = byId.get(n)!;
    const next = i + 1 < line.length ? byId.get(line[i + 1])! : undefined;
    const params = Object.fromEntries((t.latest.data.params || []).map((p) => [p.key, p.value]));
    return { trial: n, from: from(t), to: next ? from(next) : Math.max(from(t), t.steps ?? from(t)), params };
  });
  return { rows, edges, best: best?.trial, ancestry, schedule };
}
