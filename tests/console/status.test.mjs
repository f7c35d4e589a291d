// The status page at `/` in a real Chromium: served by the test worker in workerd for the default
// configuration and for tests/e2e/config.json, with its CSP, no console error, no request to
// another origin, the open servers' tools with their argument tables, no tools of a server with
// auth, and no secret or secret name anywhere. `"console": {"access": "off"}` brings back the
// JSON 404 (for the page's script too), and a server whose route is `/` keeps it. Screenshots go
// to .mcp-edge/test-output/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, CALLBACK_SIGNING_KEY, INIT, NOTIFY_TOKEN, TOKENS, post, root, startMiniflare, testConfig } from '../e2e/harness.mjs';
import { closePage, launchBrowser, open, screenshot } from '../oauth/browser.mjs';

/** Upstream addresses with a word of their own, so the test can tell they never appear. */
const UPSTREAM = 'http://127.0.0.1:9/upstream-value-4e1b';
const DEMO_UPSTREAM = 'http://127.0.0.1:9/demo-upstream-value-8c2d';

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(() => browser?.close());

/** A configuration file written to a fresh folder. */
function configFile(config) {
  const path = join(mkdtempSync(join(tmpdir(), 'mcp-edge-console-')), 'mcp-edge.json');
  writeFileSync(path, JSON.stringify(config));
  return path;
}

/**
 * Opens `/` of `origin` in a new tab and returns its response, HTML and what went wrong: console
 * errors, page errors, and requests that left for another origin.
 */
async function visit(origin, shot) {
  const page = await browser.newPage();
  const errors = [];
  const foreign = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => new URL(r.url()).origin !== origin && foreign.push(r.url()));
  try {
    const res = await open(page, `${origin}/`);
    await page.waitForLoadState('load');
    const html = await page.content();
    const raw = await res.text();
    if (shot) await screenshot(page, shot);
    return { page, res, html, raw, errors, foreign };
  } catch (e) {
    await closePage(page);
    throw e;
  }
}

/** The page's headers; its CSP allows its style block, its scripts on `origin` (the "Try a tool"
 *  panels, tests/console/try.test.mjs, and the admin's editor, tests/console/admin.test.mjs),
 *  requests to its own origin, `data:` images, and its sign-in forms to its own origin. */
function assertStrictHeaders(res, origin) {
  const h = res.headers();
  assert.equal(res.status(), 200);
  assert.equal(h['content-type'], 'text/html; charset=utf-8');
  const script = (stem) => `${origin.replace(/[.]/g, '\\.')}/${stem}\\.[0-9a-f]{16}\\.js`;
  const csp = new RegExp(`^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; script-src ${script('console')} ${script('console-admin')}; connect-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$`);
  assert.match(h['content-security-policy'], csp);
  assert.equal(h['x-frame-options'], 'DENY');
  assert.equal(h['x-content-type-options'], 'nosniff');
  assert.equal(h['referrer-policy'], 'no-referrer');
}

test('the default configuration: its tools with their arguments, small, strict, self-contained', async () => {
  const { mf, url } = await startMiniflare({ config: join(root, 'mcp-edge.json'), bindings: { DEMO_UPSTREAM_URL: DEMO_UPSTREAM } });
  try {
    const v = await visit(url.origin, 'console-status');
    try {
      assertStrictHeaders(v.res, url.origin);
      assert.deepEqual(v.errors, []);
      assert.deepEqual(v.foreign, []);
      assert.ok(Buffer.byteLength(v.raw) < 50_000, `${Buffer.byteLength(v.raw)} bytes`);
      assert.equal(await v.page.locator('h2').first().textContent(), 'mcp-edge demo');
      assert.equal(await v.page.locator('code.url').first().textContent(), `${url.origin}/mcp`);
      const tools = v.page.locator('article.tool');
      assert.equal(await tools.count(), 2);
      assert.deepEqual(await tools.locator('h4 code').allTextContents(), ['echo', 'get_current_time']);
      // The argument tables: name (and required), type, description.
      const echoRow = await tools.nth(0).locator('tbody tr').first().locator('td').allTextContents();
      assert.deepEqual(echoRow.slice(0, 3), ['messagerequired', 'string', 'The text to echo']);
      const timeRow = await tools.nth(1).locator('tbody tr').first().locator('td').allTextContents();
      assert.deepEqual(timeRow.slice(0, 3), ['timezone', 'string', 'IANA time zone, e.g. Europe/Berlin']);
      // Connect: the settings name this origin's endpoint.
      const connect = await v.page.locator('details.connect pre').allTextContents();
      assert.ok(connect.some((t) => t.includes(`HTTP Stream URL:    ${url.origin}/mcp`)), connect.join('\n---\n'));
      assert.ok(connect.some((t) => t.includes(`Endpoint:         ${url.origin}/sse`)));
      // The upstream's address is a secret's value: tool URLs are never shown.
      assert.ok(!v.raw.includes('DEMO_UPSTREAM_URL') && !v.raw.includes('demo-upstream-value') && !v.raw.includes('{env.') && !v.raw.includes('{+env.'));
    } finally {
      await closePage(v.page);
    }
  } finally {
    await mf.dispose();
  }
});

test('the test configuration: open servers list their tools, servers with auth do not, and no secret shows', async () => {
  const { mf, url } = await startMiniflare({ upstreamUrl: UPSTREAM });
  try {
    const v = await visit(url.origin, 'console-status-e2e');
    try {
      assertStrictHeaders(v.res, url.origin);
      assert.deepEqual(v.errors, []);
      assert.deepEqual(v.foreign, []);
      const config = JSON.parse(readFileSync(testConfig, 'utf8'));
      const sections = v.page.locator('section.server');
      assert.equal(await sections.count(), config.servers.length);
      for (const [i, server] of config.servers.entries()) {
        const section = v.page.locator(`#server-${i}`);
        assert.equal(await section.locator('code.url').textContent(), `${url.origin}${server.route}`);
        const shown = await section.locator('article.tool h4 code').allTextContents();
        if (server.auth) {
          assert.deepEqual(shown, [], server.route);
          assert.match(await section.locator('.locked').textContent(), /needs credentials/);
        } else {
          const visible = server.tools.filter((t) => !t.roles?.length).map((t) => t.name);
          assert.deepEqual(shown, visible, server.route);
        }
      }
      // Tools only the servers with auth have never appear.
      assert.ok(!v.raw.includes('admin_reset') && !v.raw.includes('leaky'));
      // No secret: neither the bindings' names nor their values, nor a template that names one.
      const bindings = { UPSTREAM_URL: UPSTREAM, API_KEY, NOTIFY_TOKEN, CALLBACK_SIGNING_KEY, ...TOKENS, METADATA_URL: 'http://169.254.169.254' };
      for (const [name, value] of Object.entries(bindings)) {
        assert.ok(!v.raw.includes(name), `the page names the secret ${name}`);
        assert.ok(!v.raw.includes(value), `the page shows the value of ${name}`);
      }
      assert.ok(!v.raw.includes('ENCODED_LOOPBACK_URL') && !v.raw.includes('{env.') && !v.raw.includes('{+env.'));
    } finally {
      await closePage(v.page);
    }
  } finally {
    await mf.dispose();
  }
});

test('"console": {"access": "off"} answers / as before, with the JSON 404', async () => {
  const config = JSON.parse(readFileSync(join(root, 'mcp-edge.json'), 'utf8'));
  const { mf, url } = await startMiniflare({ config: configFile({ ...config, console: { access: 'off' } }), bindings: { DEMO_UPSTREAM_URL: DEMO_UPSTREAM } });
  try {
    const res = await fetch(new URL('/', url));
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Not Found: no MCP server at /' } });
    // Nor is the page's script served.
    const { createHash } = await import('node:crypto');
    const source = readFileSync(join(root, 'src', 'console', 'try.js'));
    const script = `/console.${createHash('sha256').update(source).digest('hex').slice(0, 16)}.js`;
    const js = await fetch(new URL(script, url));
    assert.equal(js.status, 404);
    assert.equal((await js.json()).error.message, `Not Found: no MCP server at ${script}`);
  } finally {
    await mf.dispose();
  }
});

test('a server whose route is / gets its MCP requests there; other methods on / stay MCP 404s', async () => {
  const config = JSON.parse(readFileSync(join(root, 'mcp-edge.json'), 'utf8'));
  config.servers[0].route = '/';
  // The demo's rate limit names a binding the test runs do not have.
  delete config.servers[0].limits;
  const { mf, url } = await startMiniflare({ config: configFile(config), bindings: { DEMO_UPSTREAM_URL: DEMO_UPSTREAM } });
  try {
    const res = await post(new URL('/', url), INIT);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).result.serverInfo.name, 'mcp-edge-demo');
    assert.ok(res.headers.get('mcp-session-id'));
    const get = await fetch(new URL('/', url), { headers: { accept: 'text/html' } });
    assert.notEqual(get.headers.get('content-type'), 'text/html; charset=utf-8');
    await get.body?.cancel();
  } finally {
    await mf.dispose();
  }
  // With the console on and no server at /, a POST there is still the MCP 404.
  const { mf: mf2, url: url2 } = await startMiniflare({ config: join(root, 'mcp-edge.json'), bindings: { DEMO_UPSTREAM_URL: DEMO_UPSTREAM } });
  try {
    const res = await post(new URL('/', url2), INIT);
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.message, 'Not Found: no MCP server at /');
  } finally {
    await mf2.dispose();
  }
});
