// The dashboard's pipeline pages against a pipeline `cohort pipeline run`
// ran and posted (tests/web/test_pipeline_page.py): the list shows it with
// its last run's state; the graph page has a box per step with the state
// and datum counts of the status document, edges from each input step, job
// and tracked-run links that open existing pages; each commit a link to its
// commit view, whose record walks provenance back (an input another step
// made links to that step's record, a raw input is marked raw); at 800 and
// 1400 px nothing sticks out and no boxes overlap. Prints "ok NAME" per check;
// screenshots go to DASH_SCREENSHOTS.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { check, launch, overflow } from "./browser.mjs";

const url = process.env.DASH_URL;
const shots = process.env.DASH_SCREENSHOTS;
const expect = JSON.parse(readFileSync(process.env.DASH_EXPECT, "utf8"));
const doc = expect.status;
const TIMEOUT = 15000;

// Boxes that overlap each other, and boxes whose content does not fit them.
function crowding() {
  const out = [];
  const boxes = [...document.querySelectorAll(".dag-step")];
  const rects = boxes.map((b) => b.getBoundingClientRect());
  for (let i = 0; i < rects.length; i++) {
    for (let j = i + 1; j < rects.length; j++) {
      const a = rects[i], b = rects[j];
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
        out.push(`${boxes[i].dataset.step} overlaps ${boxes[j].dataset.step}`);
    }
  }
  for (const b of boxes) {
    if (b.scrollWidth > b.clientWidth + 1) out.push(`${b.dataset.step}'s content is wider than its box`);
    const r = b.getBoundingClientRect();
    for (const c of b.querySelectorAll("*")) {
      const q = c.getBoundingClientRect();
      if (q.width && (q.right > r.right + 0.5 || q.left < r.left - 0.5)) out.push(`${b.dataset.step}: ${c.className || c.tagName} sticks out`);
    }
  }
  return out;
}

const { browser, page, errors } = await launch();
page.setDefaultTimeout(TIMEOUT);
await page.addInitScript((token) => sessionStorage.setItem("cohort.queue-token", token), process.env.DASH_QUEUE_TOKEN);
const graph = `${url}/#/pipeline/${encodeURIComponent(doc.pipeline)}`;
try {
  await check("the list shows the pipeline and its last run's state", async () => {
    await page.goto(`${url}/#/pipelines`);
    const row = page.locator(`#pipelines tr[data-pipeline="${doc.pipeline}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute("data-state"), doc.state);
    const chips = await row.locator(".step-chip").evaluateAll((cs) => cs.map((c) => c.title));
    assert.deepEqual(chips, doc.steps.map((s) => `${s.name}: ${s.state}`));
    await row.locator("a").click();
    await page.waitForSelector(".dag-step");
    assert.equal(new URL(page.url()).hash, `#/pipeline/${encodeURIComponent(doc.pipeline)}`);
  });

  await check("each step's box shows its state, datums and jobs", async () => {
    await page.goto(graph);
    await page.waitForSelector(".dag-step");
    assert.equal(await page.locator(".dag-step").count(), doc.steps.length);
    for (const s of doc.steps) {
      const box = page.locator(`.dag-step[data-step="${s.name}"]`);
      assert.equal(await box.getAttribute("data-state"), s.state, s.name);
      const datums = box.locator(".datums");
      assert.deepEqual(await datums.evaluate((d) => [d.dataset.done, d.dataset.total, d.dataset.failed].map(Number)),
                       [s.datums.done, s.datums.total, s.datums.failed], s.name);
      assert.match(await datums.innerText(), new RegExp(`^${s.datums.done}/${s.datums.total} datums`));
      const jobs = await box.locator(".step-jobs a").evaluateAll((as) => as.map((a) => [a.dataset.job, a.getAttribute("href")]));
      assert.deepEqual(jobs, s.jobs.slice(-6).map((j) => [String(j), `#/queue/${j}`]), s.name);
      if (s.output_commit) assert.match(await box.locator(".step-output").innerText(), new RegExp(`@${s.output_commit.slice(0, 12)}`));
    }
  });

  await check("steps are laid out by depth with an edge from each input step", async () => {
    const x = async (name) => (await page.locator(`.dag-step[data-step="${name}"]`).boundingBox());
    const edges = await page.locator("path.dag-edge").evaluateAll((ps) => ps.map((p) => `${p.dataset.from}->${p.dataset.to}`).sort());
    const expected = [];
    for (const s of doc.steps) {
      for (const i of s.inputs) {
        if (!i.step) continue;
        expected.push(`${i.step}->${s.name}`);
        const from = await x(i.step), to = await x(s.name);
        assert.ok(from.x + from.width < to.x, `${i.step} is left of ${s.name}`);
      }
    }
    assert.deepEqual(edges, expected.sort());
  });

  await check("the failed datums are listed with their reasons", async () => {
    for (const s of doc.steps) {
      const ids = await page.locator(`#step-details tr[data-step="${s.name}"] [data-datum]`).evaluateAll((ds) => ds.map((d) => d.dataset.datum));
      assert.deepEqual(ids.sort(), Object.keys(s.failed_datums).sort(), s.name);
    }
  });

  await check("a tracked run's link opens its run page", async () => {
    const link = page.locator(`.dag-step[data-step="${expect.tracked_step}"] .step-runs a[data-run="${expect.tracked_run}"]`);
    await link.click();
    await page.waitForSelector("#run-name");
    assert.equal(new URL(page.url()).hash, `#/run/${expect.tracked_run}`);
    assert.equal(await page.locator("#page-error").count(), 0);
  });

  await check("a job's link opens its job page", async () => {
    await page.goto(graph);
    const first = doc.steps[0].jobs.at(-1);
    await page.locator(`.dag-step[data-step="${doc.steps[0].name}"] a[data-job="${first}"]`).click();
    await page.waitForSelector("#job-state");
    assert.equal(await page.locator("h1").innerText().then((t) => t.startsWith(`Job ${first}`)), true);
  });

  const stepOf = (name) => doc.steps.find((s) => s.name === name);
  const sq = stepOf("sq"), total = stepOf("total");
  const commitView = (id) => `#/pipeline/${encodeURIComponent(doc.pipeline)}/commit/${encodeURIComponent(id)}`;
  // The view's inputs as [commit, made here?, shown as raw?].
  const inputRows = () => page.locator("#commit-inputs tr[data-commit]").evaluateAll((rs) => rs.map((r) =>
    [r.dataset.commit, r.dataset.made, r.querySelector(".raw-input")?.textContent || ""]));

  await check("an output commit's link opens its record, with the step and inputs that made it", async () => {
    await page.goto(graph);
    await page.locator(`.dag-step[data-step="total"] .step-output a.commit-link`).click();
    await page.waitForSelector("#commit-inputs");
    assert.equal(new URL(page.url()).hash, commitView(total.output_commit));
    assert.equal(await page.locator("#commit-view").getAttribute("data-made"), "yes");
    assert.equal(await page.locator("#commit-id").innerText(), total.output_commit);
    assert.equal(await page.locator("#commit-location").innerText(), total.output);
    assert.equal(await page.locator("#commit-step a").getAttribute("data-step"), "total");
    // total read sq's output commit, which this pipeline made.
    assert.deepEqual(await inputRows(), [[sq.output_commit, "yes", ""]]);
    const [record] = doc.commits.filter((r) => r.output_commit === total.output_commit);
    const jobs = await page.locator("#commit-jobs a").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
    assert.deepEqual(jobs, record.jobs.map((j) => `#/queue/${j}`));
    assert.match(await page.locator("#commit-run").innerText(), new RegExp(record.run));
    assert.equal(await page.locator("#commit-uses li[data-commit]").count(), 0);
  });

  await check("an input another step made links to that step's record; a raw input shows as raw", async () => {
    await page.locator(`#commit-inputs tr[data-commit="${sq.output_commit}"] a.commit-link`).click();
    await page.waitForFunction((id) => document.querySelector("#commit-view")?.dataset.commit === id, sq.output_commit);
    assert.equal(await page.locator("#commit-step a").getAttribute("data-step"), "sq");
    const raw = sq.input_commits[0].commit;
    assert.deepEqual(await inputRows(), [[raw, "no", "raw input, not made by this pipeline"]]);
    assert.equal(await page.locator("#commit-inputs a").count(), 0);
    // ... and total's commit was made from it.
    const used = await page.locator("#commit-uses li[data-commit] a").evaluateAll((as) => as.map((a) => a.dataset.commit));
    assert.deepEqual(used, [total.output_commit]);
  });

  await check("the table's commit links open their views; a raw commit has no record", async () => {
    await page.goto(graph);
    await page.locator(`#step-details tr[data-step="sq"] a.commit-link[data-commit="${sq.input_commits[0].commit}"]`).click();
    await page.waitForSelector("#commit-missing");
    assert.equal(await page.locator("#commit-view").getAttribute("data-made"), "no");
    assert.equal(await page.locator("#commit-missing").innerText(), "Raw input, not made by this pipeline: it has no provenance record.");
    await page.goto(graph);
    await page.locator(`#step-details tr[data-step="sq"] td:nth-child(3) a.commit-link`).click();
    await page.waitForFunction((id) => document.querySelector("#commit-view")?.dataset.commit === id, sq.output_commit);
    assert.equal(await page.locator("#commit-step a").getAttribute("data-step"), "sq");
  });

  for (const width of [800, 1400]) {
    await check(`the pages fit at ${width} px`, async () => {
      await page.setViewportSize({ width, height: 900 });
      for (const [name, hash, ready] of [["pipelines", "#/pipelines", "#pipelines"], ["pipeline", `#/pipeline/${encodeURIComponent(doc.pipeline)}`, "path.dag-edge"],
                                        ["pipeline-commit", commitView(sq.output_commit), "#commit-inputs"]]) {
        await page.goto(`${url}/${hash}`);
        await page.reload();
        await page.waitForSelector(ready);
        await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
        if (shots) await page.screenshot({ path: path.join(shots, `${name}-${width}.png`), fullPage: true });
        assert.deepEqual((await page.evaluate(overflow)).slice(0, 10), [], `${name} at ${width} px`);
        assert.deepEqual(await page.evaluate(crowding), [], `${name} at ${width} px`);
      }
    });
  }
  assert.deepEqual(errors, [], "no uncaught errors in the page");
} finally {
  await browser.close();
}
