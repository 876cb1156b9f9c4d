// Shared by the browser tests and the dashboard benchmark: headless Debian
// chromium driven by npm's playwright-core (installed by tools/setup.sh into
// build-tools/web), and waiting on page conditions with a deadline.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(path.join(root, "build-tools/web/node_modules/"));
const { chromium } = require("playwright-core");

export async function launch(width = 1280, height = 800) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage({ viewport: { width, height } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  return { browser, page, errors };
}

// Counts the canvas pixels inside `selector` that are not blank (transparent or white).
export async function inkedPixels(page, selector) {
  return page.$$eval(`${selector} canvas`, (canvases) => canvases.reduce((sum, c) => {
    const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] > 0 && !(data[i] > 245 && data[i + 1] > 245 && data[i + 2] > 245)) n++;
    }
    return sum + n;
  }, 0));
}
