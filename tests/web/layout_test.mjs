// Every page of the dashboard at 800 and 1400 px wide (issue 26 item 7):
// nothing sticks out past the right edge, neither the document (its scroll
// width) nor any element outside a scrolling box that itself fits. Saves a
// full-page screenshot of each in DASH_SCREENSHOTS. Run by
// tests/web/test_dashboard.py; prints "ok NAME" per page and width.
import assert from "node:assert/strict";
import path from "node:path";
import { check, launch, overflow } from "./browser.mjs";

const url = process.env.DASH_URL;
const shots = process.env.DASH_SCREENSHOTS;
const run = process.env.DASH_COMPARE_RUN_IDS.split(",")[0];  // has an engine timeline
const TIMEOUT = 15000;

// [name, hash, selectors that show the page is drawn]
const PAGES = [
  ["projects", "#/", ["#projects tr[data-experiment-id]"]],
  ["runs-table", `#/p/${process.env.DASH_EXPERIMENT_ID}`, [".run-row"]],
  ["run", `#/run/${run}`, ['#metric-charts .chart[data-metric="loss"] canvas', "#timeline-canvas"]],
  ["compare", `#/compare?runs=${process.env.DASH_COMPARE_RUN_IDS}`, ["#compare-curves canvas", "#compare-scatter canvas"]],
  ["sweep", `#/sweep/${process.env.DASH_SWEEP_ID}`, ["#trials tbody tr", "#sweep-best canvas", "#sweep-parallel canvas",
                                                     "#sweep-rungs .rung"]],
  ["sweep-runs-table", `#/p/${process.env.DASH_SWEEP_EXPERIMENT_ID}`, [".run-row"]],
  ["queue", "#/queue", ["#jobs tr[data-job-id]"]],
  ["job", `#/queue/${JSON.parse(process.env.DASH_JOBS).running}`, ["#job-log:has-text('tick 3')"]],
];

const { browser, page, errors } = await launch();
page.setDefaultTimeout(TIMEOUT);
// The queue pages ask for the queue's token once per tab.
await page.addInitScript((token) => sessionStorage.setItem("cohort.queue-token", token), process.env.DASH_QUEUE_TOKEN);
try {
  for (const width of [800, 1400]) {
    await page.setViewportSize({ width, height: 900 });
    for (const [name, hash, ready] of PAGES) {
      await check(`${name} fits at ${width} px`, async () => {
        await page.goto(`${url}/${hash}`);
        await page.reload();  // laid out for this width from the start
        for (const selector of ready) await page.waitForSelector(selector);
        await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
        await page.screenshot({ path: path.join(shots, `${name}-${width}.png`), fullPage: true });
        const problems = await page.evaluate(overflow);
        assert.deepEqual(problems.slice(0, 10), [], `${name} at ${width} px`);
      });
    }
  }
  assert.deepEqual(errors, [], "no uncaught errors in the page");
} finally {
  await browser.close();
}
