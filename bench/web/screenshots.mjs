// Screenshots of every dashboard page (for docs/img): node screenshots.mjs
// URL EXPERIMENT_ID RUN_ID LIVE_RUN_ID COMPARE_IDS OUT_DIR.
import { launch } from "../../tests/web/browser.mjs";

const [url, experiment, runId, liveId, compareIds, out] = process.argv.slice(2);
const { browser, page, errors } = await launch(1280, 800);
page.setDefaultTimeout(30000);
const shot = (name, fullPage = false) => page.screenshot({ path: `${out}/dashboard-${name}.png`, fullPage });
try {
  await page.goto(`${url}/`);
  await page.waitForSelector("#projects a");
  await shot("projects");
  await page.goto(`${url}/#/p/${experiment}`);
  await page.waitForFunction(() => document.querySelector("#run-count")?.textContent?.endsWith(" runs"));
  await shot("runs");
  await page.selectOption("#group-by", "params.lr");
  await page.waitForSelector(".group-row");
  await page.click("#column-picker summary");
  await shot("runs-grouped");
  await page.goto(`${url}/#/run/${runId}`);
  await page.waitForSelector("#timeline-canvas");
  await shot("run", true);
  await page.goto(`${url}/#/run/${liveId}`);
  await page.waitForSelector('#system-charts .chart canvas');
  await shot("run-live", true);
  await page.goto(`${url}/#/compare?runs=${compareIds}`);
  await page.waitForSelector("#compare-scatter canvas");
  await page.fill("#compare-smoothing", "0.6");
  await shot("compare", true);
  if (errors.length) throw new Error(errors.join("\n"));
} finally {
  await browser.close();
}
