// Cross-site requests against a live `cohort server` in headless chromium
// (issue 25 item 1): a page on another loopback port tries what any web page
// can (no-cors fetches with text/plain, a form POST, a CORS request, a
// cross-origin PUT), and a DNS-rebinding page (rebind.test resolving to
// 127.0.0.1, same origin as far as the browser knows) tries to read and
// write; then the dashboard's own origin does the same and succeeds.
// Settings: CSRF_SERVER (http://127.0.0.1:PORT), CSRF_ATTACKER
// (http://127.0.0.1:OTHER/attack.html), CSRF_MARKER (a file a job would make).
import assert from "node:assert/strict";
import { check, launch } from "./browser.mjs";

const server = process.env.CSRF_SERVER;
const port = new URL(server).port;
const rebinding = `http://rebind.test:${port}`;
// Local Network Access (Chromium's block on public pages calling loopback)
// is off: other browsers have none, and the server must not rely on it.
const { browser, page, errors } = await launch(1280, 800, [
  "--host-resolver-rules=MAP rebind.test 127.0.0.1",
  "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests," +
    "PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults"]);
page.setDefaultTimeout(15000);

try {
  await check("cross-site page", async () => {
    await page.goto(process.env.CSRF_ATTACKER);
    await page.waitForFunction(() => window.attackDone === true);
    const outcome = await page.evaluate(() => window.outcome);
    // The CORS request is stopped at its preflight (403: a foreign Origin),
    // and a browser cannot send a cross-origin PUT without one.
    assert.equal(outcome.cors, "blocked");
    assert.equal(outcome.put, "blocked");
  });

  await check("DNS rebinding page", async () => {
    // The attacker's page, as served by its own server before the name was
    // rebound; the browser then sends its same-origin requests to 127.0.0.1.
    await page.route(`${rebinding}/attack.html`, (route) => route.fulfill({
      contentType: "text/html", body: "<html><body>rebinding</body></html>" }));
    await page.goto(`${rebinding}/attack.html`);
    const answers = await page.evaluate(async () => {
      const create = await fetch("/api/2.0/mlflow/experiments/create", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: "csrf-rebinding" }) });
      const search = await fetch("/ajax-api/2.0/mlflow/experiments/search?max_results=10");
      return [create.status, await create.text(), search.status];
    });
    assert.equal(answers[0], 403);
    assert.match(answers[1], /Host 'rebind\.test:\d+' does not name this server; start it with --allowed-hosts rebind\.test/);
    assert.equal(answers[2], 403);
  });

  await check("the dashboard's own origin", async () => {
    await page.goto(`${server}/health`);
    const status = await page.evaluate(async () => (await fetch("/ajax-api/2.0/mlflow/experiments/create", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: "same-origin" }) })).status);
    assert.equal(status, 200);
  });
  assert.deepEqual(errors, []);
} finally {
  await browser.close();
}
