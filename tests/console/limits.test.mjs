// The console's "Your limits" panel in a real headless Chromium: a person signed in (here with
// the admin token) sees what is left to them under each server's `rateLimits`, read by the
// page's script from /console/limits, with no console error and nothing from another origin; a
// visitor gets no panel, and /console/limits answers them 401.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMiniflare } from '../e2e/harness.mjs';
import { launchBrowser, open, screenshot } from '../oauth/browser.mjs';

const ADMIN_TOKEN = 'admin-token-limits-page-1e7c-55b0a9d3c2f4';
const CONFIG = {
  servers: [{
    route: '/mcp', name: 'limited', version: '1', privateUpstreams: ['127.0.0.1'],
    rateLimits: [
      { name: 'per user', per: ['principal'], rate: { perSecond: 0.5, burst: 5 } },
      { name: 'monthly', per: ['principal'], quota: { calls: 1000, period: 'month' } },
      { name: 'upstream', per: ['upstream'], concurrency: { max: 2, queue: 4 } },
    ],
    tools: [{ name: 'echo', http: { url: 'http://127.0.0.1:9/echo' } }],
  }],
};

let browser;
let worker;
let origin;
before(async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'mcp-edge-limits-page-')), 'mcp-edge.json');
  writeFileSync(path, JSON.stringify(CONFIG));
  worker = await startMiniflare({ config: path, bindings: { MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  origin = worker.url.origin;
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await worker?.mf.dispose();
});

test('a visitor sees no panel, and /console/limits answers 401', async () => {
  const page = await browser.newPage();
  await open(page, `${origin}/`);
  assert.equal(await page.locator('#your-limits').count(), 0);
  const res = await fetch(`${origin}/console/limits`);
  assert.equal(res.status, 401);
  await page.close();
});

test('a signed-in person sees what is left under each limit', async () => {
  const page = await browser.newPage();
  const errors = [];
  const foreign = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => new URL(r.url()).origin !== origin && foreign.push(r.url()));
  await open(page, `${origin}/`);
  await page.locator('details.signin summary').click();
  await page.locator('#admin-token').fill(ADMIN_TOKEN);
  const home = page.waitForResponse((r) => r.url() === `${origin}/`);
  await page.locator('form.token button').click();
  await home;
  await page.waitForURL(`${origin}/`);
  const rows = page.locator('#your-limits tbody tr');
  await rows.nth(2).waitFor();
  const cells = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.deepEqual(cells.map((c) => c.slice(0, 3)), [['limited', 'per user', '5'], ['limited', 'monthly', '1000'], ['limited', 'upstream', '0 running, 0 waiting']]);
  assert.equal(cells[0][3], '0 s');
  assert.match(cells[1][3], /^\d+ s$/);
  await screenshot(page, 'console-your-limits');
  assert.deepEqual(errors, []);
  assert.deepEqual(foreign, []);
  await page.close();
});
