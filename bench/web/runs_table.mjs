// Times the dashboard's runs table in headless chromium: node runs_table.mjs
// URL EXPERIMENT_ID RUNS REPEATS. Per repeat, a fresh page load of the
// project's table; prints one JSON line per repeat: ms until the first rows
// are drawn, ms until every run is loaded and counted, and ms until the last
// row is drawn after scrolling to the bottom, and the time inside runs/search
// requests.
import { launch } from "../../tests/web/browser.mjs";

const [url, experiment, runs, repeats] = process.argv.slice(2);
const { browser, page } = await launch();
page.setDefaultTimeout(60000);
try {
  for (let r = 0; r < Number(repeats); r++) {
    await page.goto("about:blank");
    const start = Date.now();
    await page.goto(`${url}/#/p/${experiment}`);
    await page.waitForSelector(".run-row");
    const firstRows = Date.now() - start;
    const total = `${Number(runs).toLocaleString("en-US")} runs`;
    await page.waitForFunction((t) => document.querySelector("#run-count")?.textContent === t, total);
    const allLoaded = Date.now() - start;
    await page.$eval("#runs-viewport", (v) => { v.scrollTop = v.scrollHeight; });
    await page.waitForFunction((n) => {
      const rows = [...document.querySelectorAll(".run-row")];
      const spacer = document.querySelector(".spacer");
      return rows.length > 0 && rows.length < 200 &&
             rows.some((row) => row.style.transform === `translateY(${(n - 1) * 28}px)`) && spacer;
    }, Number(runs));
    const lastRow = Date.now() - start;
    const domRows = await page.$$eval(".run-row", (rows) => rows.length);
    // Time spent in runs/search requests (server + transfer), the rest is the page's.
    const searchMs = await page.evaluate(() => performance.getEntriesByType("resource")
      .filter((e) => e.name.includes("runs/search")).reduce((s, e) => s + e.duration, 0));
    console.log(JSON.stringify({ firstRows, allLoaded, lastRow, domRows, searchMs: Math.round(searchMs) }));
  }
} finally {
  await browser.close();
}
