// Browser tests of the sweep page against a live `cohort server` that
// tests/web/test_sweep_page.py filled with real sweeps: node sweep_page_test.mjs
// (DASH_URL, DASH_EXPECT: the JSON of what the journal and the store say,
// DASH_SCREENSHOT, DASH_SCREENSHOT_PBT: PNG paths of the ASHA and the PBT
// sweep's page, or empty). Prints "ok NAME" per check; exits 1
// on the first failure.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { check, launch, waitInked } from "./browser.mjs";

const url = process.env.DASH_URL;
const { asha, hyperband, pbt, live } = JSON.parse(readFileSync(process.env.DASH_EXPECT, "utf8"));
const TIMEOUT = 15000;

const { browser, page, errors } = await launch();
page.setDefaultTimeout(TIMEOUT);

const close = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} != ${b}`);
const numbers = (text) => (text ? text.split(",") : []).map((v) => (v === "" ? null : Number(v)));
// Each row of the trials table: {trial, col: text or data-value}.
const tableRows = () => page.$$eval("#trials tbody tr", (rows) => rows.map((r) => {
  const out = { trial: r.dataset.trial };
  for (const td of r.querySelectorAll("td")) out[td.dataset.col] = td.dataset.value ?? td.textContent;
  return out;
}));

try {
  // First, while it still runs: the page follows a running sweep without a reload.
  await check("a running sweep's page follows it to the end", async () => {
    await page.goto(`${url}/#/sweep/${live.sweep}`);
    await page.waitForSelector("#sweep-status");
    assert.equal(await page.textContent("#sweep-status"), "RUNNING");
    await page.waitForSelector('#trials th[data-col="trial"]');
    await page.click('#trials th[data-col="trial"]');  // descending: the order must survive the refreshes
    await page.waitForFunction(() => document.querySelector("#sweep-status")?.textContent === "FINISHED",
                               undefined, { timeout: 90000 });
    assert.equal(await page.textContent("#trial-count"), String(live.trials));
    const order = await page.$$eval("#trials tbody tr", (rows) => rows.map((r) => Number(r.dataset.trial)));
    assert.deepEqual(order, [...Array(live.trials).keys()].reverse());
    assert.equal(await page.textContent('#trials th[data-col="trial"]'), "Trial ▼");
    assert.equal(await page.$('[data-state="running"]'), null);
    const done = await page.$('[data-state="completed"]');
    const completed = done ? Number(await done.textContent()) : 0;
    assert.equal(numbers(await page.getAttribute("#sweep-best", "data-finals")).length, completed);
  });

  await check("runs table marks the sweep's runs and links to its page", async () => {
    await page.goto(`${url}/#/p/${asha.experiment}`);
    await page.waitForFunction((n) => document.querySelector("#run-count")?.textContent === `${n} runs`, asha.runs);
    // The sweep's own runs: the continued one (and the trials) fold under the first.
    await page.fill("#runs-filter", "tags.`cohort.sweep.role` = 'sweep'");
    await page.press("#runs-filter", "Enter");
    await page.waitForFunction((n) => document.querySelector("#run-count")?.textContent === `${n} runs`, asha.sweep_runs.length);
    assert.equal(await page.$$eval(".run-row", (rs) => rs.length), 1);
    await page.click(`.nest-toggle[data-run-id="${asha.sweep}"]`);
    await page.waitForFunction((n) => document.querySelectorAll(".run-row").length === n, asha.sweep_runs.length);
    const links = await page.$$eval(".run-row .sweep-link", (as) => as.map((a) => [a.closest(".run-row").dataset.runId, a.getAttribute("href")]));
    assert.deepEqual(links.sort(), asha.sweep_runs.map((id) => [id, `#/sweep/${asha.sweep}`]).sort());
    await page.click(".run-row .sweep-link");
    await page.waitForSelector("#trials tbody tr");
    assert.equal(await page.evaluate(() => location.hash), `#/sweep/${asha.sweep}`);
    const sweepRuns = await page.$$eval("#sweep-runs a", (as) => as.map((a) => a.getAttribute("href")));
    assert.deepEqual(sweepRuns, asha.sweep_runs.map((id) => `#/run/${id}`));
  });

  await check("trials table: one row per trial with its state, status and values", async () => {
    const rows = await tableRows();
    assert.deepEqual(rows.map((r) => r.trial), Object.keys(asha.trials).sort((a, b) => a - b));
    const header = await page.$$eval("#trials th", (ths) => ths.map((th) => th.dataset.col));
    assert.deepEqual(header, ["trial", "state", "status", "params.behave", "params.optimizer", "params.x",
                              "last", "best", "steps", "duration"]);
    for (const r of rows) {
      const e = asha.trials[r.trial];
      assert.equal(r.state, e.state, `trial ${r.trial} state`);
      assert.equal(r.status, e.status, `trial ${r.trial} status`);
      for (const k of ["last", "best", "steps"]) {
        if (e[k] === null) assert.equal(r[k], "", `trial ${r.trial} ${k}`);
        else close(Number(r[k]), e[k], `trial ${r.trial} ${k}`);
      }
    }
    for (const [state, n] of Object.entries(Object.values(asha.trials).reduce((c, t) => ({ ...c, [t.state]: (c[t.state] || 0) + 1 }), {}))) {
      assert.equal(await page.textContent(`[data-state="${state}"]`), String(n), `${state} count`);
    }
  });

  await check("trials table sorts by any column", async () => {
    const best = (rows) => rows.map((r) => (r.best === "" ? null : Number(r.best)));
    const expected = Object.values(asha.trials).map((t) => t.best);
    const present = expected.filter((v) => v !== null);
    await page.click('#trials th[data-col="best"]');  // first click: best first (min)
    await page.waitForSelector('#trials th[data-col="best"]:has-text("▲")');
    const up = best(await tableRows());
    assert.deepEqual(up, [...present.sort((a, b) => a - b), ...expected.filter((v) => v === null)]);
    await page.click('#trials th[data-col="best"]');
    await page.waitForSelector('#trials th[data-col="best"]:has-text("▼")');
    const down = best(await tableRows());
    assert.deepEqual(down, [...[...present].sort((a, b) => b - a), ...expected.filter((v) => v === null)]);
    await page.click('#trials th[data-col="trial"]');
    await page.waitForSelector('#trials th[data-col="trial"]:has-text("▲")');
  });

  await check("best-so-far curve: the sweep run's best_loss, the completed trials as points", async () => {
    const host = "#sweep-best";
    const got = await page.$eval(host, (h) => [h.dataset.best, h.dataset.finals]);
    const [bestValues, finals] = got.map(numbers);
    assert.equal(bestValues.length, asha.best.length);
    asha.best.forEach((v, i) => close(bestValues[i], v, `best after ${i + 1}`));
    assert.equal(finals.length, asha.finals.length);
    asha.finals.forEach((v, i) => close(finals[i], v, `completed trial ${i + 1}`));
    await waitInked(page, host, 500);
    const best = Math.min(...asha.finals);
    assert.ok((await page.textContent("#sweep-best-value")).startsWith(String(Math.round(best * 1e4) / 1e4)));
  });

  await check("parallel coordinates of the params and the metric", async () => {
    await waitInked(page, "#sweep-parallel", 500);
  });

  await check("rungs: who reached each, with values and decisions from the journal", async () => {
    const cards = await page.$$eval("#sweep-rungs .rung", (cs) => cs.map((c) => ({
      resource: c.dataset.resource, count: Number(c.dataset.count),
      entries: [...c.querySelectorAll("tr")].map((tr) => [Number(tr.dataset.trial), Number(tr.dataset.value), tr.dataset.outcome]),
    })));
    assert.deepEqual(cards.map((c) => c.resource), ["1", "3", "9"]);
    for (const c of cards) {
      const e = asha.rungs[c.resource];
      assert.equal(c.count, e.length, `rung ${c.resource} count`);
      assert.deepEqual(c.entries.map(([t, , o]) => [t, o]), e.map(([t, , o]) => [t, o]), `rung ${c.resource}`);
      c.entries.forEach(([, v], i) => close(v, e[i][1], `rung ${c.resource} value ${i}`));
    }
    assert.ok(asha.rungs["1"].length > asha.rungs["9"].length, "successive halving");
    if (process.env.DASH_SCREENSHOT) await page.screenshot({ path: process.env.DASH_SCREENSHOT, fullPage: true });
  });

  await check("hyperband: one row of rungs per bracket", async () => {
    await page.goto(`${url}/#/sweep/${hyperband.sweep}`);
    await page.waitForSelector("#sweep-rungs");
    const brackets = await page.$$eval("#sweep-rungs .bracket", (bs) => bs.map((b) =>
      [...b.querySelectorAll(".rung")].map((r) => r.dataset.resource).join(",")));
    assert.deepEqual(brackets, hyperband.brackets.sort((a, b) => Number(a.split(",")[0]) - Number(b.split(",")[0])));
    assert.equal(await page.$$eval("#sweep-rungs tr", (rows) => rows.length), hyperband.reached);
    assert.equal(await page.$("#sweep-lineage"), null);  // PBT's only
  });

  await check("pbt: the lineage draws every exploit, the best trial's line strong; a parent column", async () => {
    await page.goto(`${url}/#/sweep/${pbt.sweep}`);
    await page.waitForSelector("#sweep-lineage");
    const byNumber = (a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
    const edges = await page.$$eval("#sweep-lineage .lineage-edge", (es) => es.map((e) =>
      [Number(e.dataset.parent), Number(e.dataset.child), Number(e.dataset.step), e.getBBox().height]));
    assert.equal(edges.length, pbt.edges.length);
    assert.equal(await page.getAttribute("#sweep-lineage", "data-edges"), String(pbt.edges.length));
    assert.deepEqual(edges.map((e) => e.slice(0, 3)).sort(byNumber), pbt.edges);
    assert.ok(edges.every((e) => e[3] > 0), "an edge joins two different rows");
    const rows = await page.$$eval("#sweep-lineage .lineage-trial", (ls) => ls.map((l) =>
      [Number(l.dataset.trial), l.classList.contains("best"), l.getBBox().width]));
    assert.equal(rows.length, pbt.trials);
    assert.deepEqual(rows.filter((r) => r[1]).map((r) => r[0]).sort((a, b) => a - b), [...pbt.ancestry].sort((a, b) => a - b));
    assert.ok(rows.every((r) => r[2] > 0), "every trial's row is drawn");
    assert.equal(await page.$$eval("#sweep-lineage .lineage-edge.best", (es) => es.length), pbt.ancestry.length - 1);
    const schedule = await page.$$eval("#sweep-schedule tbody tr", (trs) => trs.map((tr) => Number(tr.dataset.trial)));
    assert.deepEqual(schedule, [...pbt.ancestry].reverse());
    const header = await page.$$eval("#trials th", (ths) => ths.map((th) => th.dataset.col));
    assert.deepEqual(header.slice(0, 3), ["trial", "parent", "state"]);
    const parents = await page.$$eval("#trials tbody tr", (trs) => trs.map((tr) =>
      [tr.dataset.trial, tr.querySelector('td[data-col="parent"] a')?.getAttribute("href") ?? null]));
    assert.equal(parents.length, pbt.trials);
    for (const [trial, href] of parents) {
      const parent = pbt.parents[trial];
      assert.equal(href, parent === undefined ? null : `#/run/${pbt.runs[parent]}`, `trial ${trial}'s parent`);
    }
    if (process.env.DASH_SCREENSHOT_PBT) await page.screenshot({ path: process.env.DASH_SCREENSHOT_PBT, fullPage: true });
  });

  await check("links: a trial's run, a continued run, the runs table filtered; a plain run is refused", async () => {
    const [trial] = Object.values(asha.trials);
    await page.goto(`${url}/#/run/${trial.run}`);
    await page.click("#sweep-link");
    await page.waitForSelector("#trials tbody tr");
    for (const id of [trial.run, asha.sweep_runs[1]]) {  // any run of the sweep: its page
      await page.goto(`${url}/#/sweep/${id}`);
      await page.waitForFunction((id) => location.hash === `#/sweep/${id}`, asha.sweep);
      await page.waitForSelector("#trials tbody tr");
    }
    await page.click("#sweep-runs-table");
    await page.waitForFunction((n) => document.querySelector("#run-count")?.textContent === `${n} runs`,
                               asha.trial_runs + asha.sweep_runs.length);
    assert.equal(await page.inputValue("#runs-filter"), `tags.\`cohort.sweep.id\` = '${asha.sweep}'`);
    await page.goto(`${url}/#/sweep/${asha.plain}`);
    await page.waitForSelector("#page-error");
    assert.equal(await page.textContent("#page-error"),
                 `Run ${asha.plain} is not part of a sweep (it has no tag cohort.sweep.id)`);
  });

  assert.deepEqual(errors, [], "no uncaught errors in the page");
} finally {
  await browser.close();
}
