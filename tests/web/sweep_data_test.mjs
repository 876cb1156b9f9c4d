// Unit tests of web/src/sweep_data.ts (what the sweep page works out from
// the tracked runs) on cases a live sweep does not reliably produce: a trial
// started again from scratch after a restart, a sweep recorded before the
// cohort.sweep.rungs tag, maximize, Hyperband brackets, PBT's lineage, odd
// input.
// node sweep_data_test.mjs: bundles the module with npm's esbuild
// (build-tools/web), prints "ok NAME" per check, exits 1 on the first failure.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { check } from "./browser.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const esbuild = createRequire(path.join(root, "build-tools/web/node_modules/"))("esbuild");
const dir = mkdtempSync(path.join(os.tmpdir(), "sweep-data-"));
const built = esbuild.buildSync({ entryPoints: [path.join(root, "web/src/sweep_data.ts")], bundle: true,
                                  format: "esm", write: false, logLevel: "warning" });
writeFileSync(path.join(dir, "sweep_data.mjs"), built.outputFiles[0].text);
const d = await import(pathToFileURL(path.join(dir, "sweep_data.mjs")).href);
rmSync(dir, { recursive: true });

const ASHA = { metric: "loss", maximize: false, algorithm: "asha", resource: "epoch", minResource: 1, maxResource: 9, reduction: 3 };
let nextId = 0;
const T0 = Date.UTC(2026, 0, 1);
// A run as runs/search returns it; start and end in seconds after T0.
function run(trial, state, { start = 0, end, rungs, status = "FINISHED", params = {}, cloneOf, cloneStep } = {}) {
  const tags = [["cohort.sweep.trial", String(trial)], ["cohort.sweep.state", state]];
  if (rungs) tags.push(["cohort.sweep.rungs", rungs]);
  if (cloneOf !== undefined) tags.push(["cohort.sweep.clone_of", String(cloneOf)]);
  if (cloneStep !== undefined) tags.push(["cohort.sweep.clone_step", String(cloneStep)]);
  return {
    info: { run_id: `r${nextId++}`, experiment_id: "1", status, start_time: T0 + 1000 * start,
            end_time: end === undefined ? undefined : T0 + 1000 * end },
    data: { tags: tags.map(([key, value]) => ({ key, value })), params: Object.entries(params).map(([key, value]) => ({ key, value })) },
  };
}
const points = (...steps) => steps.map(([step, value], i) => ({ step, value, timestamp: i }));
const entries = (t) => d.rungEntries(t).map(({ rung, entry }) => [rung, entry.step, entry.value, entry.outcome]);

await check("bracket resources as AshaBracket makes them", async () => {
  assert.deepEqual(d.bracketResources(1, 9, 3), [1, 3, 9]);
  assert.deepEqual(d.bracketResources(1, 10, 3), [1, 3, 9, 10]);
  assert.deepEqual(d.bracketResources(9, 9, 3), [9]);
  assert.deepEqual(d.bracketResources(2, 16, 2), [2, 4, 8, 16]);
  for (const [first, max, eta] of [[0, 9, 3], [1, 9, 1], [10, 9, 3], [NaN, 9, 3]]) {
    assert.deepEqual(d.bracketResources(first, max, eta), [], `${first},${max},${eta}`);  // no endless loop
  }
});

await check("a trial started again from scratch: its runs in order, the first report at each rung", async () => {
  const a = run(0, "interrupted", { start: 0, end: 5, rungs: "1,3,9", status: "KILLED" });
  const b = run(0, "paused", { start: 6, end: 20, rungs: "1,3,9", status: "KILLED" });
  const history = new Map([[a.info.run_id, points([1, 0.9], [2, 0.8])],
                           [b.info.run_id, points([1, 0.95], [2, 0.85], [3, 0.7], [4, 0.6], [5, 0.65])]]);
  const [t] = d.trialsOf([b, a], history, ASHA, T0 + 30000);
  assert.equal(t.latest, b);
  assert.equal(t.state, "paused");
  assert.deepEqual(t.points.map((p) => p.step), [1, 2, 1, 2, 3, 4, 5]);
  assert.equal(t.last, 0.65);
  assert.equal(t.best, 0.6);
  assert.equal(t.steps, 5);
  assert.equal(t.durationS, 5 + 14);
  // Rung 1 from the first run (ASHA decided on it); rung 3 from the second.
  assert.deepEqual(entries(t), [[0, 1, 0.9, "promoted"], [1, 3, 0.7, "promoted"]]);
});

await check("outcomes at the last rung reached", async () => {
  const cases = [
    ["paused", [[1, 0.5]], "paused"], ["running", [[1, 0.5]], "promoted"], ["failed", [[1, 0.5]], "failed"],
    ["interrupted", [[1, 0.5]], "interrupted"], ["stopped", [[1, 0.5], [2, 0.4], [3, 0.3]], "stopped"],
    ["failed", [[1, 0.5], [2, 0.4]], "promoted"],  // it went on after the rung, then failed
    ["completed", [[1, 0.5], [2, 0.4], [3, 0.3], [9, 0.1]], "completed"],
    ["running", [[1, 0.5], [3, 0.3], [9, 0.1]], "running"],  // at the last rung, its end not yet recorded
  ];
  for (const [state, pts, outcome] of cases) {
    const r = run(1, state, { rungs: "1,3,9" });
    const [t] = d.trialsOf([r], new Map([[r.info.run_id, points(...pts)]]), ASHA, 0);
    const got = entries(t);
    assert.equal(got[got.length - 1][3], outcome, `${state} ${JSON.stringify(pts)}`);
  }
});

await check("reports between rungs and past them: one rung per report", async () => {
  const r = run(2, "paused", { rungs: "1,3,9" });
  const [t] = d.trialsOf([r], new Map([[r.info.run_id, points([2, 0.5], [10, 0.2])]]), ASHA, 0);
  assert.deepEqual(entries(t), [[0, 2, 0.5, "promoted"], [1, 10, 0.2, "paused"]]);
});

await check("a sweep recorded before the rungs tag: ASHA's bracket from the sweep's params", async () => {
  const r = run(3, "paused");
  const [t] = d.trialsOf([r], new Map([[r.info.run_id, points([1, 0.5])]]), ASHA, 0);
  assert.deepEqual(t.rungs, [1, 3, 9]);
  const [h] = d.trialsOf([r], new Map(), { ...ASHA, algorithm: "hyperband" }, 0);
  assert.deepEqual(h.rungs, []);  // Hyperband's brackets cannot be guessed
  const [g] = d.trialsOf([r], new Map(), { ...ASHA, algorithm: "grid" }, 0);
  assert.deepEqual(g.rungs, []);
});

await check("brackets by first rung, each rung best first (maximize)", async () => {
  const runs = [run(0, "completed", { rungs: "3,9", end: 4 }), run(1, "paused", { rungs: "1,3,9" }),
                run(2, "completed", { rungs: "1,3,9", end: 2 }), run(3, "paused", { rungs: "1,3,9" }),
                run(4, "failed", { rungs: "9" })];
  const history = new Map([[runs[0].info.run_id, points([3, 0.6], [9, 0.9])], [runs[1].info.run_id, points([1, 0.2])],
                           [runs[2].info.run_id, points([1, 0.4], [3, 0.5], [9, 0.8])], [runs[3].info.run_id, points([1, 0.3], [3, 0.1])]]);
  const max = { ...ASHA, maximize: true, algorithm: "hyperband" };
  const trials = d.trialsOf(runs, history, max, 0);
  assert.equal(trials[3].best, 0.3);  // the largest
  const brackets = d.bracketsOf(trials, true);
  assert.deepEqual(brackets.map((b) => b.rungs.map((r) => r.resource)), [[1, 3, 9], [3, 9], [9]]);
  assert.deepEqual(brackets[0].rungs.map((r) => r.entries.map((e) => [e.trial, e.outcome])),
                   [[[2, "promoted"], [3, "promoted"], [1, "paused"]], [[2, "promoted"], [3, "paused"]], [[2, "completed"]]]);
  assert.deepEqual(brackets[2].rungs[0].entries, []);  // the failed trial reported nothing
  // Completed trials by end time: the best-so-far curve's dots.
  assert.deepEqual(d.completionOrder(trials).map((t) => t.trial), [2, 0]);
});

await check("runs without a trial number or with an odd rungs tag are not trusted", async () => {
  const trials = d.trialsOf([run("x", "running"), run("", "running"), run(5, "paused", { rungs: "1,three,9" }),
                             run(6, "paused", { rungs: "3,1" }), run(7, "paused", { rungs: "1,3,27" })], new Map(), ASHA, 0);
  assert.deepEqual(trials.map((t) => t.trial), [5, 6, 7]);
  assert.deepEqual(trials.map((t) => t.rungs), [[1, 3, 9], [1, 3, 9], [1, 3, 27]]);  // bad tags: ASHA's params
});

const PBT = { metric: "loss", maximize: false, algorithm: "pbt", resource: "step", minResource: 2, maxResource: 8, reduction: 3 };
// A PBT population of 3 (trials 0-2) and 4 replacements: 3 from 0 at 2, 4 from 3 at 4, 5 from 0 at 4, 6 from 4 at 6.
function population() {
  const spec = [[0, "stopped", 4, {}], [1, "completed", 8, {}], [2, "stopped", 2, {}],
                [3, "stopped", 4, { cloneOf: 0, cloneStep: 2 }], [4, "stopped", 6, { cloneOf: 3, cloneStep: 4 }],
                [5, "completed", 8, { cloneOf: 0, cloneStep: 4 }], [6, "completed", 8, { cloneOf: 4, cloneStep: 6 }]];
  const runs = spec.map(([t, state, , o]) => run(t, state, { ...o, params: { x: String(0.1 * (t + 1)), opt: t === 6 ? "adam" : "sgd" } }));
  const from = (o) => o.cloneStep ?? 0;
  // Values: trial 6 ends best (0.1), then 5 (0.2), then 1 (0.5).
  const last = { 0: 0.9, 1: 0.5, 2: 1.5, 3: 0.8, 4: 0.7, 5: 0.2, 6: 0.1 };
  const history = new Map(spec.map(([t, , to, o], i) => [runs[i].info.run_id,
    points(...Array.from({ length: to - from(o) }, (_, k) => [from(o) + k + 1, k === to - from(o) - 1 ? last[t] : 2]))]));
  return { runs, history };
}

await check("PBT: parent and fork step from the tags, the family tree, the best line and its schedule", async () => {
  const { runs, history } = population();
  const trials = d.trialsOf(runs, history, PBT, 0);
  assert.deepEqual(trials.map((t) => [t.parent, t.forkStep]),
                   [[undefined, undefined], [undefined, undefined], [undefined, undefined], [0, 2], [3, 4], [0, 4], [4, 6]]);
  const l = d.lineageOf(trials, false);
  // Depth first from each root, children by fork step: 0 > {3 > 4 > 6, 5}, 1, 2.
  assert.deepEqual(l.rows.map((r) => [r.trial, r.depth, r.from, r.to]),
                   [[0, 0, 0, 4], [3, 1, 2, 4], [4, 2, 4, 6], [6, 3, 6, 8], [5, 1, 4, 8], [1, 0, 0, 8], [2, 0, 0, 2]]);
  assert.deepEqual(l.edges, [{ parent: 0, child: 3, step: 2 }, { parent: 3, child: 4, step: 4 },
                             { parent: 4, child: 6, step: 6 }, { parent: 0, child: 5, step: 4 }]);
  assert.equal(l.best, 6);
  assert.deepEqual(l.ancestry, [6, 4, 3, 0]);
  // Each ancestor's values until its child took over, the best trial's to its end.
  assert.deepEqual(l.schedule.map((e) => [e.trial, e.from, e.to, e.params.x, e.params.opt]),
                   [[0, 0, 2, "0.1", "sgd"], [3, 2, 4, "0.4", "sgd"], [4, 4, 6, "0.5", "sgd"], [6, 6, 8, "0.7000000000000001", "adam"]]);
  // Maximize: the largest completed value is trial 1's (0.5), a root.
  const max = d.lineageOf(d.trialsOf(runs, history, { ...PBT, maximize: true }, 0), true);
  assert.equal(max.best, 1);
  assert.deepEqual(max.ancestry, [1]);
  assert.deepEqual(max.schedule.map((e) => [e.trial, e.from, e.to]), [[1, 0, 8]]);
});

await check("PBT: no completed trial yet, the best last value; a sweep without the step tag; odd parents", async () => {
  const a = run(0, "running"), b = run(1, "running", { cloneOf: 0 });  // recorded before clone_step
  const history = new Map([[a.info.run_id, points([1, 0.9], [2, 0.8])], [b.info.run_id, points([3, 0.7], [4, 0.6])]]);
  const trials = d.trialsOf([a, b], history, PBT, 0);
  assert.equal(trials[1].forkStep, 2);  // the step before its first report
  const l = d.lineageOf(trials, false);
  assert.equal(l.best, 1);
  assert.deepEqual(l.ancestry, [1, 0]);
  assert.deepEqual(l.schedule.map((e) => [e.trial, e.from, e.to]), [[0, 0, 2], [1, 2, 4]]);
  // A parent that is missing, later than the child, itself, or not a number: a root without an edge.
  const odd = d.trialsOf([run(2, "running", { cloneOf: 9, cloneStep: 2 }), run(3, "running", { cloneOf: 4, cloneStep: 2 }),
                          run(4, "running", { cloneOf: 4, cloneStep: 2 }), run(5, "running", { cloneOf: "two", cloneStep: 2 }),
                          run(6, "running", { cloneOf: 2, cloneStep: "x" })], new Map(), PBT, 0);
  assert.deepEqual(odd.map((t) => t.parent), [9, 4, 4, undefined, 2]);
  assert.equal(odd[4].forkStep, 0);  // no reports, no step tag
  const ol = d.lineageOf(odd, false);
  assert.deepEqual(ol.edges, [{ parent: 2, child: 6, step: 0 }]);
  assert.deepEqual(ol.rows.map((r) => [r.trial, r.depth, r.from, r.to]), [[2, 0, 0, 0], [6, 1, 0, 0], [3, 0, 0, 0], [4, 0, 0, 0], [5, 0, 0, 0]]);
  assert.equal(ol.best, undefined);
  assert.deepEqual([ol.ancestry, ol.schedule], [[], []]);
  // Equal values: the lower-numbered trial is the best, as `cohort sweep` says, even when
  // the other completed first.
  const c = run(0, "completed", { end: 10 }), e = run(1, "completed", { cloneOf: 0, cloneStep: 2, end: 5 });
  const tied = d.trialsOf([c, e], new Map([[c.info.run_id, points([4, 0.5])], [e.info.run_id, points([4, 0.5])]]), PBT, 0);
  assert.equal(d.bestCompleted(tied, false).trial, 0);
  assert.deepEqual(d.lineageOf(tied, false).ancestry, [0]);
  // Other algorithms' trials have no parent.
  assert.deepEqual(d.trialsOf([run(0, "completed", { rungs: "1,3,9" })], new Map(), ASHA, 0).map((t) => t.parent), [undefined]);
});
