// Unit tests of web/src/columns.ts (the user's metrics against cohort's own,
// the runs table's default columns, log axes): node columns_test.mjs bundles
// the module with npm's esbuild (build-tools/web), prints "ok NAME" per check,
// exits 1 on the first failure.
import assert from "node:assert/strict";
import { bundle, check } from "./browser.mjs";

const c = await bundle("web/src/columns.ts");

await check("metric groups and the user's first", async () => {
  assert.equal(c.metricGroup("engine/step_time_s"), "engine");
  assert.equal(c.metricGroup("system/cpu_percent"), "system");
  assert.equal(c.metricGroup("test_accuracy"), "user");
  assert.equal(c.metricGroup("val/engine/x"), "user");
  assert.deepEqual(c.userFirst(["system/gpu0_util", "train_loss", "engine/allreduces", "test_accuracy", "train_loss"]),
                   ["test_accuracy", "train_loss", "engine/allreduces", "system/gpu0_util"]);
});

await check("default columns: the user's metrics and the params, half each", async () => {
  const cols = ["metrics.engine/step_time_s", "metrics.system/cpu_percent", "metrics.train_loss", "metrics.test_accuracy",
                "metrics.a", "metrics.b", "params.lr", "params.batch", "params.wd", "tags.purpose"];
  assert.deepEqual(c.defaultColumns(cols, 4), ["metrics.a", "metrics.b", "params.batch", "params.lr"]);
  assert.deepEqual(c.defaultColumns(cols, 7), ["metrics.a", "metrics.b", "metrics.test_accuracy", "metrics.train_loss",
                                               "params.batch", "params.lr", "params.wd"]);
  // An unused half goes to the other kind; never fewer than two.
  assert.deepEqual(c.defaultColumns(["metrics.loss", "params.a", "params.b", "params.c"], 4),
                   ["metrics.loss", "params.a", "params.b", "params.c"]);
  assert.deepEqual(c.defaultColumns(["metrics.loss", "metrics.acc", "params.a"], 0), ["metrics.acc", "params.a"]);
  assert.deepEqual(c.defaultColumns(["metrics.engine/x", "tags.t"], 6), []);
});

await check("log axes for positive values over two decades or more", async () => {
  assert.equal(c.wantsLogScale(["0.1", "0.01", "0.001"]), true);
  assert.equal(c.wantsLogScale([1e-4, 1e-2]), true);
  assert.equal(c.wantsLogScale([32, 64, 128]), false);
  assert.equal(c.wantsLogScale([0, 0.01, 1]), false);    // zero has no log
  assert.equal(c.wantsLogScale([-1, 100]), false);
  assert.equal(c.wantsLogScale(["sgd", "adam"]), false);
  assert.equal(c.wantsLogScale([0.5]), false);
  assert.equal(c.wantsLogScale([undefined, "", 1, 1000]), true);
  assert.equal(c.axisPosition(0.01, 0.001, 0.1, true), 0.5);
  assert.ok(Math.abs(c.axisPosition(0.01, 0.001, 0.1, false) - 0.0909) < 1e-3);
  assert.equal(c.axisPosition(3, 3, 3, true), 0.5);
});

const tree = await bundle("web/src/run_tree.ts");
const run = (id, tags = {}) => ({ info: { run_id: id }, data: { tags: Object.entries(tags).map(([key, value]) => ({ key, value })) } });

await check("parents: mlflow.parentRunId, and a sweep's trials under its run", async () => {
  assert.equal(tree.parentOf(run("a")), undefined);
  assert.equal(tree.parentOf(run("a", { "mlflow.parentRunId": "p" })), "p");
  assert.equal(tree.parentOf(run("a", { "mlflow.parentRunId": "a" })), undefined);
  assert.equal(tree.parentOf(run("t", { "cohort.sweep.id": "s", "cohort.sweep.role": "trial" })), "s");
  assert.equal(tree.parentOf(run("s", { "cohort.sweep.id": "s", "cohort.sweep.role": "sweep" })), undefined);
  assert.equal(tree.parentOf(run("s2", { "cohort.sweep.id": "s", "cohort.sweep.role": "sweep" })), "s");  // continued
});

await check("nesting: children under their parent, collapsed unless expanded, none lost", async () => {
  const runs = [run("c1", { "mlflow.parentRunId": "p" }), run("p"), run("x"), run("c2", { "mlflow.parentRunId": "p" }),
                run("g", { "mlflow.parentRunId": "c2" }), run("orphan", { "mlflow.parentRunId": "gone" }),
                run("k1", { "mlflow.parentRunId": "k2" }), run("k2", { "mlflow.parentRunId": "k1" })];
  const flat = (expanded) => tree.nest(runs, (r) => r, new Set(expanded)).map((n) => [n.item.info.run_id, n.depth, n.children]);
  assert.deepEqual(flat([]), [["p", 0, 2], ["x", 0, 0], ["orphan", 0, 0], ["k1", 0, 1]]);
  assert.deepEqual(flat(["p"]), [["p", 0, 2], ["c1", 1, 0], ["c2", 1, 1], ["x", 0, 0], ["orphan", 0, 0], ["k1", 0, 1]]);
  assert.deepEqual(flat(["p", "c2", "k1"]), [["p", 0, 2], ["c1", 1, 0], ["c2", 1, 1], ["g", 2, 0], ["x", 0, 0],
                                             ["orphan", 0, 0], ["k1", 0, 1], ["k2", 1, 1]]);
  // Every run once when all are expanded.
  assert.equal(flat(["p", "c2", "k1", "k2", "x"]).length, runs.length);
});

const timeline = await bundle("web/src/timeline.ts");

await check("timeline: time ticks and lane labels", async () => {
  assert.deepEqual(timeline.timeTicks(19750, 10), [0, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000]);
  assert.deepEqual(timeline.timeTicks(5, 2), [0, 5]);
  assert.deepEqual(timeline.timeTicks(0, 5), [0]);
  assert.equal(timeline.formatMicros(2000, 1000), "2 ms");
  assert.equal(timeline.formatMicros(2500000, 1e6), "2.5 s");
  assert.equal(timeline.formatMicros(20, 10), "20 µs");
  const events = [{ name: "thread_name", ph: "M", pid: 1, tid: 7, args: { name: "allreduce" } },
                  { name: "process_name", ph: "M", pid: 1, args: { name: "worker-1" } }];
  assert.deepEqual(timeline.laneLabels(events, ["1/7", "1/8", "2/7"]),
                   ["worker-1 · allreduce", "worker-1 · thread 8", "rank 2 · thread 7"]);
});

const importance = await bundle("web/src/importance.ts");

await check("parameter importance: ε² of each param's groups, shares of the sum", async () => {
  // y depends on a only: a explains all of it, b (balanced against a) none.
  const a = ["x", "x", "y", "y", "x", "x", "y", "y"], b = ["p", "q", "p", "q", "p", "q", "p", "q"];
  const y = [1, 1, 3, 3, 1, 1, 3, 3];
  const got = importance.paramImportances(new Map([["b", b], ["a", a]]), y);
  assert.deepEqual(got.map((g) => [g.param, g.share, g.explained, g.levels]), [["a", 1, 1, 2], ["b", 0, 0, 2]]);
  // Hand-worked ε²: groups {1,2}, {3,6}: between 9, total 14, within 5 over n - k = 2.
  assert.ok(Math.abs(importance.explainedVariance([0, 0, 1, 1], [1, 2, 3, 6]) - (9 - 5 / 2) / 14) < 1e-12);
  assert.equal(importance.explainedVariance([0, 0, 0, 0], [1, 2, 3, 4]), 0);  // one group
  assert.equal(importance.explainedVariance([0, 1, 0, 1], [2, 2, 2, 2]), 0);  // no spread
  assert.equal(importance.paramImportances(new Map([["a", a.slice(0, 7)]]), y.slice(0, 7)), null);  // too few trials
  // Many distinct numbers: equal-count bins by rank, so a log scale changes nothing.
  const lr = Array.from({ length: 40 }, (_, i) => 10 ** (-4 + 3 * ((i * 7) % 40) / 40));
  const loss = lr.map((v) => (Math.log10(v) + 2.5) ** 2);
  const lin = importance.paramImportances(new Map([["lr", lr.map(String)]]), loss);
  const log = importance.paramImportances(new Map([["lr", lr.map((v) => String(Math.log10(v)))]]), loss);
  assert.equal(lin[0].levels, 6);
  assert.equal(lin[0].explained, log[0].explained);
  assert.ok(lin[0].explained > 0.8, String(lin[0].explained));  // a smooth curve: most of it, not all (6 steps)
});
