// Browser tests of the dashboard against a live `cohort server` that
// tests/web/test_dashboard.py filled: node dashboard_test.mjs (settings in
// DASH_* env variables). Prints "ok NAME" per check; exits 1 on the first failure.
import assert from "node:assert/strict";
import { check, launch, waitInked } from "./browser.mjs";

const url = process.env.DASH_URL;
const experiment = process.env.DASH_EXPERIMENT_ID;
const runCount = Number(process.env.DASH_RUN_COUNT);
const liveRun = process.env.DASH_LIVE_RUN_ID;
const compareRuns = process.env.DASH_COMPARE_RUN_IDS.split(",");
const TIMEOUT = 15000;

const { browser, page, errors } = await launch();
page.setDefaultTimeout(TIMEOUT);

const rowNames = () => page.$$eval(".run-row .c-name", (cells) => cells.map((c) => c.textContent));
const columnValues = (col) => page.$$eval(".run-row", (rows, col) => rows.map((r) =>
  r.querySelectorAll(".c-value")[col].textContent), col);

try {
  await check("projects list", async () => {
    await page.goto(`${url}/`);
    await page.waitForSelector(`#projects tr[data-experiment-id="${experiment}"]`);
    assert.equal(await page.textContent(`#projects tr[data-experiment-id="${experiment}"] a`), "dash-test");
    // Run counts, and the last thing that happened: the live run logs all the time.
    const cell = (e, col) => `#projects tr[data-experiment-id="${e}"] [data-col="${col}"]`;
    assert.equal(await page.textContent(cell(experiment, "runs")), "13 (1 running)");
    const last = Number(await page.getAttribute(cell(experiment, "last"), "data-time"));
    assert.ok(Date.now() - last < 30000, `dash-test's last activity ${new Date(last).toISOString()} is recent`);
    const sweepExperiment = process.env.DASH_SWEEP_EXPERIMENT_ID;
    assert.equal(await page.textContent(cell(sweepExperiment, "runs")), "31");
    assert.equal(await page.getAttribute(cell(sweepExperiment, "last"), "data-time"), process.env.DASH_SWEEP_LAST);
    const order = await page.$$eval("#projects tr[data-experiment-id]", (rows) => rows.map((r) => r.dataset.experimentId));
    assert.deepEqual(order.slice(0, 2), [sweepExperiment, experiment]);  // latest first: the sweep's end is minutes ahead
  });

  await check("table rows", async () => {
    await page.click(`#projects tr[data-experiment-id="${experiment}"] a`);
    await page.waitForFunction((n) => document.querySelector("#run-count")?.textContent === `${n} runs`, runCount);
    const names = await rowNames();
    assert.equal(names.length, runCount);  // all fit in the viewport
    for (let i = 0; i < 12; i++) assert.ok(names.includes(`trial-${i}`), `trial-${i} in ${names}`);
    const header = await page.$$eval("#runs-header .c-value", (cells) => cells.map((c) => c.dataset.col));
    assert.deepEqual(header, ["metrics.accuracy", "metrics.live_loss", "metrics.loss", "params.batch", "params.lr"]);
  });

  await check("sorting", async () => {
    await page.click('#runs-header [data-col="metrics.loss"]');  // first click: descending
    await page.waitForSelector('#runs-header [data-col="metrics.loss"]:has-text("▼")');
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent?.endsWith("runs"));
    const desc = (await columnValues(2)).filter((v) => v !== "").map(Number);
    assert.ok(desc.length >= 12);
    assert.deepEqual(desc, [...desc].sort((a, b) => b - a));
    await page.click('#runs-header [data-col="metrics.loss"]');
    await page.waitForSelector('#runs-header [data-col="metrics.loss"]:has-text("▲")');
    await page.waitForFunction(() => !document.querySelector("#run-count")?.textContent?.includes("loading"));
    const asc = (await columnValues(2)).filter((v) => v !== "").map(Number);
    assert.deepEqual(asc, [...asc].sort((a, b) => a - b));
    assert.equal((await rowNames())[0], "trial-11");  // the lowest final loss
  });

  await check("filtering", async () => {
    await page.fill("#runs-filter", "params.lr = '0.1'");
    await page.press("#runs-filter", "Enter");
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent === "4 runs");
    assert.deepEqual((await rowNames()).sort(), ["trial-0", "trial-3", "trial-6", "trial-9"]);
    await page.fill("#runs-filter", "metrics.nonsense <");
    await page.press("#runs-filter", "Enter");
    await page.waitForFunction(() => document.querySelector("#runs-error")?.textContent?.startsWith("Search failed:"));
    await page.fill("#runs-filter", "");
    await page.press("#runs-filter", "Enter");
    await page.waitForFunction((n) => document.querySelector("#run-count")?.textContent === `${n} runs`, runCount);
  });

  await check("group by", async () => {
    await page.selectOption("#group-by", "params.lr");
    await page.waitForFunction(() => document.querySelectorAll(".group-row").length === 4);
    const groups = await page.$$eval(".group-row", (rows) => rows.map((r) => r.textContent));
    assert.deepEqual(groups, ["lr = 0.001  (4 runs)", "lr = 0.01  (4 runs)", "lr = 0.1  (4 runs)",
                              "lr = (none)  (1 run)"]);
    await page.selectOption("#group-by", "");
    await page.waitForFunction(() => document.querySelectorAll(".group-row").length === 0);
  });

  await check("column picker", async () => {
    await page.click("#column-picker > summary");
    // The user's metrics and the params open; engine/*, system/* and tags in closed sections.
    const sections = await page.$$eval("#column-picker details.picker-section", (ds) =>
      ds.map((d) => [d.dataset.section, d.open, [...d.querySelectorAll("input")].map((i) => i.dataset.col)]));
    assert.deepEqual(sections.map(([s, open]) => [s, open]),
                     [["metrics", true], ["params", true], ["engine", false], ["system", false], ["tags", false]]);
    assert.deepEqual(sections[2][2], ["metrics.engine/step_time_s"]);
    assert.deepEqual(sections[3][2], ["metrics.system/cpu_percent"]);
    await page.uncheck('#column-picker input[data-col="params.batch"]');
    await page.click('#column-picker details[data-section="tags"] > summary');
    await page.check('#column-picker input[data-col="tags.purpose"]');
    const header = await page.$$eval("#runs-header .c-value", (cells) => cells.map((c) => c.dataset.col));
    assert.deepEqual(header, ["metrics.accuracy", "metrics.live_loss", "metrics.loss", "params.lr", "tags.purpose"]);
    await page.click("#column-picker > summary");
  });

  await check("run page charts draw", async () => {
    await page.goto(`${url}/#/run/${compareRuns[0]}`);
    await page.waitForSelector('.chart[data-metric="loss"] canvas');
    await page.waitForFunction(() => document.querySelector("#artifacts li"));
    await waitInked(page, '.chart[data-metric="loss"]', 500);
    const provenance = await page.textContent(".cards");
    assert.ok(provenance.includes("cohort.command"), "provenance shows the command");
    await page.waitForSelector("#timeline-canvas");
    await waitInked(page, "#timeline", 100);
    // Labelled rows (the trace's own thread name where it has one) and a time axis.
    assert.equal(await page.getAttribute("#timeline", "data-lanes"), "rank 0 · background loop|rank 0 · thread 2");
    const ticks = (await page.getAttribute("#timeline", "data-ticks")).split("|");
    assert.ok(ticks.length >= 3, ticks.join(" "));
    assert.equal(ticks[0], "0 ms");
    const values = ticks.map((t) => Number(t.replace(/ ms$/, "")));
    values.forEach((v, i) => assert.ok(ticks[i].endsWith(" ms") && (i < 2 || Math.abs(v - values[i - 1] - (values[1] - values[0])) < 1e-9)));
    assert.ok(values[values.length - 1] <= 19.75 && values[values.length - 1] + values[1] > 19.75, "ticks reach the end");
  });

  await check("run page: the user's metrics first, in the same order on every load, filling the row", async () => {
    await page.setViewportSize({ width: 1400, height: 900 });
    for (let load = 0; load < 3; load++) {
      await page.goto(`${url}/#/run/${compareRuns[1]}`);
      await page.reload();  // a fresh load each time, not only a route change
      await page.waitForSelector('#metric-charts .chart[data-metric="loss"] canvas');
      await page.waitForSelector('#metric-charts .chart[data-metric="accuracy"] canvas');
      assert.deepEqual(await page.$$eval("#metric-charts .chart", (cs) => cs.map((c) => c.dataset.metric)),
                       ["accuracy", "loss"]);
      assert.deepEqual(await page.$$eval("#engine-charts .chart", (cs) => cs.map((c) => c.dataset.metric)),
                       ["engine/step_time_s"]);
      assert.equal(await page.$eval("#engine-section", (d) => d.open), false);
      assert.equal(await page.$eval("#system-section", (d) => d.open), false);
    }
    // Two charts share the row at 1400 px: no empty right third.
    const [host, boxes] = await page.$eval("#metric-charts", (h) => [h.getBoundingClientRect().right,
      [...h.querySelectorAll(".chart")].map((c) => [c.getBoundingClientRect().top, c.getBoundingClientRect().right,
                                                    c.querySelector("canvas").getBoundingClientRect().right])]);
    assert.equal(boxes[0][0], boxes[1][0], "both charts on one row");
    assert.ok(host - boxes[1][1] < 2, `the second chart ends at the row's end (${boxes[1][1]} of ${host})`);
    assert.ok(boxes[1][1] - boxes[1][2] < 20, "its plot fills its box");
    await waitInked(page, '#metric-charts .chart[data-metric="accuracy"]', 500);
    // A closed section draws its charts when opened.
    assert.equal(await page.$$eval("#engine-charts canvas", (cs) => cs.length), 0);
    await page.click("#engine-section > summary");
    await waitInked(page, '#engine-charts .chart[data-metric="engine/step_time_s"]', 300);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await check("live run chart grows", async () => {
    await page.goto(`${url}/#/run/${liveRun}`);
    const chart = '.chart[data-metric="live_loss"]';
    await page.waitForSelector(`${chart} canvas`);
    assert.equal(await page.textContent("#run-status"), "RUNNING");
    const first = Number(await page.getAttribute(chart, "data-points"));
    assert.ok(first >= 1);
    // The client keeps logging; the page polls every 2 s and redraws.
    await page.waitForFunction(([sel, n]) => Number(document.querySelector(sel).dataset.points) >= n + 5,
                               [chart, first]);
    await waitInked(page, chart, 200);
  });

  await check("compare view shows every selected run", async () => {
    await page.goto(`${url}/#/p/${experiment}`);
    await page.waitForFunction((n) => document.querySelector("#run-count")?.textContent === `${n} runs`, runCount);
    for (const id of compareRuns) await page.check(`.run-row input[data-run-id="${id}"]`);
    await page.click("#compare-selected");
    await page.waitForSelector("#compare-legend li");
    const legend = await page.$$eval("#compare-legend li", (items) => items.map((li) => li.dataset.runId));
    assert.deepEqual(legend.sort(), [...compareRuns].sort());
    await page.waitForSelector("#compare-curves .u-legend");  // drawn once the histories are in
    const series = await page.$$eval("#compare-curves .u-legend .u-series", (s) => s.length);
    assert.equal(series, compareRuns.length + 1);  // x plus one per run
    await waitInked(page, "#compare-curves", 500);
    await waitInked(page, "#compare-parallel", 500);
    await waitInked(page, "#compare-scatter", 100);
    // lr spans 0.001..0.1: a log axis, where 0.01 is halfway; batch (32..128) stays linear.
    assert.equal(await page.getAttribute("#compare-parallel", "data-log-axes"), "lr");
    await page.selectOption("#scatter-x", "params.lr");
    assert.equal(await page.getAttribute("#compare-scatter", "data-log-axes"), "x");
    await page.selectOption("#compare-x", "time");
    await page.fill("#compare-smoothing", "0.9");
    await page.waitForSelector('#compare-curves[data-x="time"][data-smoothing="0.9"] canvas');
    await waitInked(page, "#compare-curves", 500);
  });

  await check("compare view: several metrics of several runs, one chart each", async () => {
    const charted = () => page.$$eval("#compare-curves .chart", (cs) => cs.map((c) =>
      [c.dataset.metric, c.querySelectorAll(".u-legend .u-series").length]));
    await page.click("#compare-more > summary");
    await page.check('#compare-more input[data-metric="loss"]');
    await page.waitForSelector('#compare-curves[data-metrics="accuracy,loss"] .chart[data-metric="loss"] canvas');
    assert.deepEqual(await charted(), [["accuracy", 4], ["loss", 4]]);
    await waitInked(page, '#compare-curves .chart[data-metric="loss"]', 500);
    // A link names them: the first is the main one (parallel coordinates, scatter).
    await page.goto(`${url}/#/compare?runs=${compareRuns.join(",")}&metrics=loss,engine/step_time_s,accuracy`);
    await page.waitForSelector('#compare-curves[data-metrics="loss,engine/step_time_s,accuracy"] .chart[data-metric="accuracy"] canvas');
    assert.deepEqual(await charted(), [["loss", 4], ["engine/step_time_s", 4], ["accuracy", 4]]);
    assert.equal(await page.$eval("#compare-metric", (s) => s.value), "loss");
    await waitInked(page, '#compare-curves .chart[data-metric="engine/step_time_s"]', 300);
  });

  await check("zoom reads the zoomed range's own points from the server", async () => {
    const n = Number(process.env.DASH_BIG_POINTS);
    const chart = '.chart[data-metric="big"]';
    await page.goto(`${url}/#/run/${process.env.DASH_BIG_RUN_ID}`);
    await page.waitForSelector(`${chart} canvas`);
    const data = () => page.$eval(chart, (c) => ({ points: Number(c.dataset.points), zoom: c.dataset.zoom, steps: c.dataset.steps }));
    assert.deepEqual(await data(), { points: 1000, zoom: "", steps: `0,${n - 1}` });  // the whole run, downsampled
    // Drag over a tenth of the plot, from 45 % to 55 % of its width.
    const over = await page.$eval(`${chart} .u-over`, (o) => { const r = o.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; });
    const y = over[1] + over[3] / 2;
    await page.mouse.move(over[0] + 0.45 * over[2], y);
    await page.mouse.down();
    await page.mouse.move(over[0] + 0.55 * over[2], y, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction((sel) => document.querySelector(sel).dataset.zoom !== "", chart);
    const zoomed = await data();
    const [lo, hi] = zoomed.zoom.split(",").map(Number);
    assert.ok(Math.abs(lo - 0.45 * n) < 0.02 * n && Math.abs(hi - 0.55 * n) < 0.02 * n, zoomed.zoom);
    // That range's own detail: as many points as the whole run had, all inside it
    // (the coarse series had about 100 there).
    assert.equal(zoomed.points, 1000);
    const [first, last] = zoomed.steps.split(",").map(Number);
    assert.ok(first >= lo && last <= hi && first - lo < (hi - lo) / 100 && hi - last < (hi - lo) / 100, zoomed.steps);
    await waitInked(page, chart, 500);
    // A double click goes back to the whole run.
    await page.dblclick(`${chart} .u-over`);
    await page.waitForFunction((sel) => document.querySelector(sel).dataset.zoom === "", chart);
    assert.deepEqual(await data(), { points: 1000, zoom: "", steps: `0,${n - 1}` });
  });

  await check("artifact preview: text, JSON and images in the page", async () => {
    await page.goto(`${url}/#/run/${compareRuns[0]}`);
    await page.waitForSelector('.preview-button[data-path="notes.txt"]');
    const previewable = await page.$$eval(".preview-button", (bs) => bs.map((b) => b.dataset.path));
    // (provenance/git.diff too when the checkout the test runs from has changes)
    assert.deepEqual(previewable.filter((p) => !p.startsWith("provenance/")).sort(),
                     ["config.json", "notes.txt", "plots/plot.png", "timeline.json"]);
    await page.click('.preview-button[data-path="notes.txt"]');
    await page.waitForSelector('#artifact-preview[data-path="notes.txt"] pre');
    assert.equal(await page.textContent("#artifact-preview pre"), process.env.DASH_ARTIFACT_TEXT);  // as text, no markup
    assert.equal(await page.$$eval("#artifact-preview b", (b) => b.length), 0);
    await page.click('.preview-button[data-path="config.json"]');
    await page.waitForSelector('#artifact-preview[data-path="config.json"] pre');
    assert.equal(await page.textContent("#artifact-preview pre"), process.env.DASH_ARTIFACT_JSON);  // indented
    await page.click('.preview-button[data-path="plots/plot.png"]');
    await page.waitForSelector('#artifact-preview[data-path="plots/plot.png"] img');
    await page.waitForFunction(() => document.querySelector("#artifact-preview img").complete &&
                                     document.querySelector("#artifact-preview img").naturalWidth > 0);
    assert.deepEqual(await page.$eval("#artifact-preview img", (i) => [i.naturalWidth, i.naturalHeight]), [120, 80]);
  });

  await check("parameter importance on the sweep page agrees with Optuna's fANOVA", async () => {
    await page.goto(`${url}/#/sweep/${process.env.DASH_SWEEP_ID}`);
    await page.waitForSelector("#sweep-importance tr[data-param]");
    const ours = Object.fromEntries(await page.$$eval("#sweep-importance tr[data-param]", (rows) =>
      rows.map((r) => [r.dataset.param, Number(r.dataset.share)])));
    const optuna = JSON.parse(process.env.DASH_OPTUNA_IMPORTANCE);
    console.log(`importance: ours ${JSON.stringify(ours)}, optuna ${JSON.stringify(optuna)}`);
    assert.deepEqual(Object.keys(ours).sort(), Object.keys(optuna).sort());
    const top = (m) => Object.entries(m).sort((a, b) => b[1] - a[1])[0][0];
    assert.equal(top(ours), "lr");  // the loss is made of lr, a little dropout, noise
    assert.equal(top(optuna), "lr");
    for (const p of Object.keys(optuna)) assert.ok(Math.abs(ours[p] - optuna[p]) < 0.1, `${p}: ${ours[p]} vs ${optuna[p]}`);
    assert.ok(Math.abs(Object.values(ours).reduce((a, b) => a + b, 0) - 1) < 1e-9);
  });

  await check("nested runs: a sweep's trials under its run, parent and children on the run pages", async () => {
    const sweep = process.env.DASH_SWEEP_ID;
    await page.goto(`${url}/#/p/${process.env.DASH_SWEEP_EXPERIMENT_ID}`);
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent === "31 runs");
    const rows = () => page.$$eval(".run-row", (rs) => rs.map((r) => [r.dataset.depth, r.querySelector(".c-name a:last-child").textContent]));
    assert.deepEqual(await rows(), [["0", "sweep-layout"]]);  // the 30 trials folded under it
    assert.equal(await page.textContent(`.nest-toggle[data-run-id="${sweep}"]`), "▸ 30");
    await page.click(`.nest-toggle[data-run-id="${sweep}"]`);
    await page.waitForFunction(() => document.querySelectorAll('.run-row[data-depth="1"]').length >= 10);
    const open = await rows();
    assert.deepEqual(open[0], ["0", "sweep-layout"]);
    assert.deepEqual(open[1], ["1", "sweep-layout trial 29"]);  // newest first, as the table sorts
    assert.equal(await page.$eval("#runs-viewport .spacer", (s) => s.style.height), `${31 * 28}px`);
    await page.click(`.run-row[data-depth="1"] .c-name a`);
    await page.waitForSelector("#parent-run");
    assert.equal(await page.textContent("#parent-run"), sweep);
    await page.click("#parent-run");
    await page.waitForSelector("#child-runs h2");
    assert.equal(await page.textContent("#child-runs h2"), "Child runs (30)");
    assert.equal(await page.$$eval("#child-runs a", (as) => as.length), 30);
  });

  const jobs = JSON.parse(process.env.DASH_JOBS);
  await check("queue page: the token, then every job with state, slots, owner, priority", async () => {
    await page.goto(`${url}/#/queue`);
    await page.waitForSelector("#queue-token-form");
    assert.match(await page.textContent("#queue-error"), /needs its token in the X-Cohort-Queue-Token header/);
    await page.fill("#queue-token", "not-the-token");
    await page.click("#queue-token-form button");
    await page.waitForFunction(() => document.querySelector("#queue-error")?.textContent?.includes("was refused"));
    await page.fill("#queue-token", process.env.DASH_QUEUE_TOKEN);
    await page.click("#queue-token-form button");
    await page.waitForSelector("#jobs tr[data-job-id]");
    const rows = await page.$$eval("#jobs tr[data-job-id]", (trs) => trs.map((tr) => [Number(tr.dataset.jobId),
      tr.dataset.state, ...["slots", "user", "priority"].map((c) => tr.querySelector(`[data-col="${c}"]`).textContent)]));
    // Running first, then waiting, then the rest (the server's order).
    assert.deepEqual(rows, [[jobs.running, "running", "2", "bob", "normal"], [jobs.pending, "pending", "1", "alice", "low"],
                            [jobs.done, "succeeded", "1", "alice", "high"]]);
    assert.match(await page.textContent(`#jobs tr[data-job-id="${jobs.pending}"] .reason`), /^#1/);
  });

  await check("job page: the log follows a running job, a finished job's log is whole", async () => {
    await page.click(`#jobs tr[data-job-id="${jobs.running}"] a`);
    await page.waitForSelector("#job-log:has-text('tick 2')");
    assert.equal(await page.textContent("#job-state"), "running");
    const lines = () => page.$eval("#job-log", (pre) => pre.textContent.trim().split("\n").length);
    const first = await lines();
    await page.waitForFunction((n) => document.querySelector("#job-log").textContent.trim().split("\n").length >= n + 10, first);
    const text = await page.textContent("#job-log");
    const ticks = text.trim().split("\n");
    ticks.forEach((line, i) => assert.equal(line, `tick ${i}`));  // in order, none lost or doubled
    // Following: the newest line is in view.
    assert.ok(await page.$eval("#job-log", (pre) => pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4));
    await page.goto(`${url}/#/queue/${jobs.done}`);
    await page.waitForSelector('#job-log[data-complete="true"]');
    assert.equal(await page.textContent("#job-log"), "hello from the queue\n");
    assert.equal(await page.textContent("#job-state"), "succeeded");
  });

  await check("rename, delete and restore a run (MLflow's lifecycle_stage)", async () => {
    const big = process.env.DASH_BIG_RUN_ID;
    await page.goto(`${url}/#/run/${big}`);
    await page.fill("#rename-input", "big (renamed)");
    await page.click("#rename-form button");
    await page.waitForFunction(() => document.querySelector("#run-name")?.textContent === "big (renamed)");
    await page.click("#delete-run");
    await page.waitForSelector("#run-deleted");
    await page.click('#app a[href^="#/p/"]');  // its project
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent === "0 runs");
    await page.selectOption("#run-view", "DELETED_ONLY");
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent === "1 runs");
    assert.deepEqual(await rowNames(), ["big (renamed)"]);
    assert.equal(await page.$eval(`.run-row[data-run-id="${big}"]`, (r) => r.classList.contains("deleted")), true);
    await page.check(`.run-row input[data-run-id="${big}"]`);
    await page.click("#restore-selected");
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent === "0 runs");
    await page.selectOption("#run-view", "ACTIVE_ONLY");
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent === "1 runs");
    // Delete from the table too, and the run page says so.
    await page.check(`.run-row input[data-run-id="${big}"]`);
    await page.click("#delete-selected");
    await page.waitForFunction(() => document.querySelector("#run-count")?.textContent === "0 runs");
    await page.goto(`${url}/#/run/${big}`);
    await page.waitForSelector("#run-deleted");
    await page.click("#restore-run");
    await page.waitForSelector("#delete-run");
    assert.equal(await page.$$eval("#run-deleted", (b) => b.length), 0);
  });

  await check("unknown run shows the server's error", async () => {
    await page.goto(`${url}/#/run/0123456789abcdef`);
    await page.waitForSelector("#page-error");
    assert.equal(await page.textContent("#page-error"), "Run with id=0123456789abcdef not found");
  });

  assert.deepEqual(errors, [], "no uncaught errors in the page");
} finally {
  await browser.close();
}
