// Shared by the browser tests and the dashboard benchmark: headless Debian
// chromium driven by npm's playwright-core (installed by tools/setup.sh into
// build-tools/web), and waiting on page conditions with a deadline.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(path.join(root, "build-tools/web/node_modules/"));
const { chromium } = require("playwright-core");

// One of web/src's modules bundled by npm's esbuild and imported, for unit
// tests of its pure functions in node.
export async function bundle(source) {
  const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
  const os = await import("node:os");
  const { pathToFileURL } = await import("node:url");
  const built = require("esbuild").buildSync({ entryPoints: [path.join(root, source)], bundle: true,
                                               format: "esm", write: false, logLevel: "warning" });
  const dir = mkdtempSync(path.join(os.tmpdir(), "web-module-"));
  try {
    writeFileSync(path.join(dir, "module.mjs"), built.outputFiles[0].text);
    return await import(pathToFileURL(path.join(dir, "module.mjs")).href);
  } finally {
    rmSync(dir, { recursive: true });
  }
}

export async function launch(width = 1280, height = 800, extraArgs = []) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", ...extraArgs],
  });
  const page = await browser.newPage({ viewport: { width, height } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e) + (process.env.DASH_STACKS ? e.stack : "")));
  return { browser, page, errors };
}

// Canvas pixels inside `selector` that are not blank (transparent or white).
function countInked(selector) {
  let n = 0;
  for (const c of document.querySelectorAll(`${selector} canvas`)) {
    const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] > 0 && !(data[i] > 245 && data[i + 1] > 245 && data[i + 2] > 245)) n++;
    }
  }
  return n;
}

// Waits (page's default timeout) until the canvases in `selector` have at
// least `min` inked pixels; charts may draw on the next animation frame.
export async function waitInked(page, selector, min) {
  await page.waitForFunction(`(${countInked})(${JSON.stringify(selector)}) >= ${min}`);
}

// Runs one named check of a test script: prints "ok NAME" when it passes (the
// Python side counts them); a failure throws out of the script.
export async function check(name, body) {
  await body();
  console.log(`ok ${name}`);
}

// What sticks out past the viewport's right edge: the document, and each
// visible element not inside a scrolling (or clipping) box that fits.
export function overflow() {
  const width = window.innerWidth;
  const out = [];
  const doc = document.scrollingElement;
  if (doc.scrollWidth > width) out.push(`document scrollWidth ${doc.scrollWidth} > ${width}`);
  for (const e of document.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if ((r.width === 0 && r.height === 0) || r.right <= width + 0.5) continue;
    let clipped = false;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") {
        clipped = a.getBoundingClientRect().right <= width + 0.5;
        break;
      }
    }
    if (!clipped) {
      const name = e.tagName.toLowerCase() + (e.id ? `#${e.id}` : "") + (e.className && typeof e.className === "string" ? `.${e.className.split(" ").join(".")}` : "");
      out.push(`${name} ends at ${Math.round(r.right)} > ${width}`);
    }
  }
  return out;
}
