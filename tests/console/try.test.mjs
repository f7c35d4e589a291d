// "Try a tool" on the status page, in a real headless Chromium: the page's own script
// (src/console/try.js) is an MCP client over Streamable HTTP against each server's endpoint on the
// page's origin. The test worker runs in workerd with tests/e2e/config.json and the e2e upstream
// on 127.0.0.1. It checks the page's CSP and script, that nothing leaves for another origin and
// nothing is logged as an error, a call from the generated form, the raw-JSON fallback, progress
// and log lines shown before the result they precede, isError results, the server's answer to
// invalid arguments, JSON-RPC errors, fields for lists, defaults and nested objects, images,
// Cancel, a stateless server, a server with static bearer tokens, a server whose Origin allowlist
// leaves loopback out (the page's own origin is still let in, no other is), and the page without
// its script, and a traced server's call showing its trace id, linked through
// `telemetry.traceLink`. Screenshots of each state go to .mcp-edge/test-output/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INIT, TOKENS, post, startMiniflare, startServer, testConfig } from '../e2e/harness.mjs';
import { startTestUpstream } from '../e2e/upstream.mjs';
import { OUTPUT_DIR, closePage, launchBrowser, open, screenshot } from '../oauth/browser.mjs';
import { startCollector } from '../telemetry/collector.mjs';

let browser;
let server;
before(async () => {
  browser = await launchBrowser();
  server = await startServer();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const config = JSON.parse(readFileSync(testConfig, 'utf8'));

/** Saves a screenshot of one element (a panel) as .mcp-edge/test-output/<name>.png. */
async function shot(locator, name) {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  const path = join(OUTPUT_DIR, `${name}.png`);
  await locator.screenshot({ path });
  console.log(`screenshot: ${path}`);
}

/**
 * Opens `/` of `origin` and returns the page with what it did: console errors and page errors,
 * requests that left for another origin, and every request to an MCP route with its method,
 * Origin header, body and status.
 */
async function visit(origin) {
  const page = await browser.newPage();
  const seen = { errors: [], foreign: [], mcp: [] };
  page.on('console', (m) => m.type() === 'error' && seen.errors.push(m.text()));
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('request', (r) => new URL(r.url()).origin !== origin && seen.foreign.push(r.url()));
  const records = new Map();
  page.on('request', (r) => {
    if (!new URL(r.url()).pathname.endsWith('/mcp')) return;
    const h = r.headers();
    const record = { method: r.method(), origin: h.origin, authorization: h.authorization, session: h['mcp-session-id'], version: h['mcp-protocol-version'], body: r.postData(), status: null };
    records.set(r, record);
    seen.mcp.push(record);
  });
  page.on('response', (res) => {
    const record = records.get(res.request());
    if (record) record.status = res.status();
  });
  const res = await open(page, `${origin}/`);
  await page.waitForLoadState('load');
  return { page, res, ...seen };
}

/** The panel of the server at `route`, once the script has shown it. */
async function panelOf(page, route) {
  const panel = page.locator(`div.try[data-route="${route}"]`);
  await panel.locator('button.connect').waitFor();
  return panel;
}

/** Connects the panel (with `token`, when given) and waits until it says how it went. */
async function connect(panel, token) {
  if (token !== undefined) await panel.locator('input[type=password]').fill(token);
  await panel.locator('button.connect').click();
  await panel.locator('p.status', { hasText: /^(Connected|Not connected)/ }).waitFor();
  return panel.locator('p.status').textContent();
}

/** Chooses a tool by name in the panel's list. */
async function choose(panel, name) {
  const options = await panel.locator('select.tool option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  const found = options.find(([, text]) => text === name || text.endsWith(`(${name})`));
  assert.ok(found, `no tool ${name} in ${options.map(([, t]) => t)}`);
  await panel.locator('select.tool').selectOption(found[0]);
}

/** The form's field of the argument `name`: its label, control and hints. */
function fieldBox(panel, name) {
  return panel.locator('.field').filter({ has: panel.page().locator('label code', { hasText: new RegExp(`^${name}$`) }) });
}

/** The form control of the argument `name`. */
function field(panel, name) {
  return fieldBox(panel, name).locator('input, select, textarea');
}

/** Clicks Call and waits for the outcome: a result box, or an error box. */
async function call(panel) {
  await panel.locator('button.call').click();
  const result = panel.locator('.output .result');
  await result.waitFor();
  return result;
}

test('the page loads its one script under a strict CSP, and each server gets a panel', async () => {
  const v = await visit(server.url.origin);
  try {
    const csp = v.res.headers()['content-security-policy'];
    const src = await v.page.locator('script').getAttribute('src');
    assert.match(src, /^\/console\.[0-9a-f]{16}\.js$/);
    assert.equal(
      csp.replace(/'sha256-[A-Za-z0-9+/=]+'/, 'HASH').replace(/console-admin\.[0-9a-f]{16}\.js/, 'console-admin.ADMIN.js'),
      `default-src 'none'; style-src HASH; script-src ${server.url.origin}${src} ${server.url.origin}/console-admin.ADMIN.js; connect-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
    await v.page.locator('div.try:not([hidden]) button.connect').first().waitFor();
    assert.equal(await v.page.locator('div.try:not([hidden])').count(), config.servers.length);
    // The script: served by the Worker, cached for good, pinned by its hash.
    const script = await fetch(new URL(src, server.url));
    assert.equal(script.status, 200);
    assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(script.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(script.headers.get('x-content-type-options'), 'nosniff');
    const body = await script.text();
    assert.equal(body, readFileSync(new URL('../../src/console/try.js', import.meta.url), 'utf8'));
    const { createHash } = await import('node:crypto');
    assert.equal(await v.page.locator('script').getAttribute('integrity'), `sha256-${createHash('sha256').update(body).digest('base64')}`);
    const stale = await fetch(new URL('/console.0000000000000000.js', server.url));
    assert.equal(stale.status, 404);
    await stale.body?.cancel();
    await screenshot(v.page, 'console-try-page');
    assert.deepEqual(v.errors, []);
    assert.deepEqual(v.foreign, []);
  } finally {
    await closePage(v.page);
  }
});

test('a tool called from its generated form shows its result; the raw JSON fallback calls it too', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/mcp');
    const count = config.servers[0].tools.length;
    assert.equal(await connect(panel), `Connected to mcp-edge-test 0.0.1 (protocol 2025-11-25): ${count} tools.`);
    const listed = await panel.locator('select.tool option').allTextContents();
    assert.deepEqual(listed, config.servers[0].tools.map((t) => t.name));
    await choose(panel, 'echo');
    // The form: one required string, marked so.
    assert.equal(await panel.locator('.field label').textContent(), 'messagerequiredstring');
    await field(panel, 'message').fill('hello from the form');
    const result = await call(panel);
    assert.equal(await result.getAttribute('class'), 'result');
    assert.equal(await result.locator('pre.structured').textContent(), JSON.stringify({ message: 'hello from the form' }, null, 2));
    await shot(panel, 'console-try-form-result');

    // lookup: a required string and an enum (a select); then the same call as raw JSON.
    await choose(panel, 'lookup');
    assert.deepEqual(await field(panel, 'unit').locator('option').allTextContents(), ['(not set)', 'c', 'f']);
    await field(panel, 'city').fill('Lyon');
    await field(panel, 'unit').selectOption({ label: 'c' });
    await panel.locator('input.raw').check();
    // The raw JSON starts from what the form held.
    assert.deepEqual(JSON.parse(await panel.locator('textarea.raw-json').inputValue()), { city: 'Lyon', unit: 'c' });
    assert.ok(await panel.locator('.form').isHidden());
    await panel.locator('textarea.raw-json').fill('{"city": "Paris", "unit": "f"}');
    const raw = await call(panel);
    assert.deepEqual(JSON.parse(await raw.locator('pre.structured').textContent()), { path: '/inspect/Paris', query: '?unit=f' });
    await shot(panel, 'console-try-raw-json');
    // Back to the form: it takes the raw JSON's values.
    await panel.locator('input.raw').uncheck();
    assert.equal(await field(panel, 'city').inputValue(), 'Paris');
    assert.equal(await field(panel, 'unit').locator('option:checked').textContent(), 'f');

    // A real MCP client: initialize, initialized, setLevel, then the session's id and version.
    const methods = v.mcp.filter((r) => r.method === 'POST').map((r) => JSON.parse(r.body).method);
    assert.deepEqual(methods.slice(0, 4), ['initialize', 'notifications/initialized', 'logging/setLevel', 'tools/list']);
    const [init, ...later] = v.mcp;
    assert.equal(init.session, undefined);
    assert.equal(JSON.parse(init.body).params.protocolVersion, '2025-11-25');
    assert.ok(later.every((r) => r.session === later[0].session && r.session && r.version === '2025-11-25'));
    // Every request carried the page's own origin, and the server let it in.
    assert.ok(v.mcp.length >= 6);
    for (const r of v.mcp) {
      assert.equal(r.origin, server.url.origin);
      assert.ok(r.status === 200 || r.status === 202, `${r.method} ${r.body}: ${r.status}`);
    }
    assert.deepEqual(v.errors, []);
    assert.deepEqual(v.foreign, []);
  } finally {
    await closePage(v.page);
  }
});

test('progress and log lines show as they stream, before the result', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/mcp');
    await connect(panel);
    await choose(panel, 'stream_hold');
    await field(panel, 'key').fill('console-stream');
    await panel.locator('button.call').click();
    await server.upstream.waitForHold('console-stream');
    // The upstream holds its result back: what shows now came while the call was running.
    await panel.locator('p.progress', { hasText: 'started (1 of 2)' }).waitFor();
    await panel.locator('ol.log li', { hasText: 'upstream: working' }).waitFor();
    assert.equal(await panel.locator('progress').evaluate((p) => [p.value, p.max].join('/')), '1/2');
    assert.equal(await panel.locator('ol.log li .level').textContent(), 'info');
    assert.equal(await panel.locator('.output .result').count(), 0);
    assert.equal(await panel.locator('.output').textContent(), 'Calling stream_hold…');
    assert.ok(await panel.locator('button.cancel').isEnabled());
    await shot(panel, 'console-try-streaming');
    server.upstream.release('console-stream', 'released after the progress');
    const result = await panel.locator('.output .result').waitFor().then(() => panel.locator('.output .result'));
    assert.equal(await result.locator('pre').textContent(), 'released after the progress');
    // The progress and the log stay above the result.
    assert.ok(await panel.locator('ol.log').isVisible());
    await shot(panel, 'console-try-streamed-result');
    // The call asked for progress with a token of its own.
    const callBody = JSON.parse(v.mcp.find((r) => r.body?.includes('tools/call')).body);
    assert.match(callBody.params._meta.progressToken, /^console-\d+-\d+$/);
    assert.deepEqual(v.errors, []);
  } finally {
    await closePage(v.page);
  }
});

test('Cancel sends notifications/cancelled and stops the call', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/mcp');
    await connect(panel);
    await choose(panel, 'stream_hold');
    await field(panel, 'key').fill('console-cancel');
    await panel.locator('button.call').click();
    await panel.locator('p.progress', { hasText: 'started' }).waitFor();
    const cancelled = v.page.waitForRequest((r) => r.postData()?.includes('notifications/cancelled'));
    await panel.locator('button.cancel').click();
    const body = JSON.parse((await cancelled).postData());
    const callId = JSON.parse(v.mcp.find((r) => r.body?.includes('"tools/call"')).body).id;
    assert.deepEqual(body.params, { requestId: callId, reason: 'Cancelled from the console' });
    await panel.locator('.output .result.note', { hasText: 'Cancelled.' }).waitFor();
    assert.ok(await panel.locator('button.call').isEnabled());
    await shot(panel, 'console-try-cancelled');
    server.upstream.release('console-cancel', 'too late');
  } finally {
    await closePage(v.page);
  }
});

test('an upstream failure shows as isError, and invalid arguments show the server’s error', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/mcp');
    await connect(panel);
    await choose(panel, 'fail');
    assert.equal(await panel.locator('.form').textContent(), 'No arguments.');
    const failed = await call(panel);
    assert.equal(await failed.getAttribute('class'), 'result error');
    assert.equal(await failed.locator('h5').textContent(), 'The tool reported an error (isError)');
    assert.equal(await failed.locator('pre').textContent(), 'The upstream answered HTTP 500 (text/plain): upstream exploded');
    await shot(panel, 'console-try-is-error');

    // A required argument left empty: the page sends nothing for it, the server says so.
    await choose(panel, 'echo');
    const missing = await call(panel);
    assert.equal(await missing.getAttribute('class'), 'result error');
    assert.match(await missing.locator('pre').textContent(), /invalid arguments for tool "echo": missing required property "message"/);
    await shot(panel, 'console-try-invalid-arguments');
    // A wrong type through the raw JSON.
    await panel.locator('input.raw').check();
    await panel.locator('textarea.raw-json').fill('{"message": 5}');
    const wrong = await call(panel);
    assert.match(await wrong.locator('pre').textContent(), /invalid arguments for tool "echo"/);
    // JSON the page cannot read is not sent at all.
    const sent = v.mcp.length;
    await panel.locator('textarea.raw-json').fill('{"message": ');
    const local = await call(panel);
    assert.equal(await local.locator('h5').textContent(), 'Error');
    assert.equal(v.mcp.length, sent);
    assert.deepEqual(v.errors, []);
  } finally {
    await closePage(v.page);
  }
});

test('nested objects, lists and defaults get their fields; a JSON-RPC error is shown with its code', async () => {
  const v = await visit(server.url.origin);
  try {
    // Catalog mode: three meta-tools whose schemas hold a list, an integer with a default, and
    // an object.
    const panel = await panelOf(v.page, '/catalog/mcp');
    await connect(panel);
    assert.deepEqual(await panel.locator('select.tool option').allTextContents(), ['Search tools (search_tools)', 'Describe a tool (describe_tool)', 'Call a tool (call_tool)']);
    await choose(panel, 'search_tools');
    assert.equal(await field(panel, 'tags').getAttribute('placeholder'), '["…"]');
    assert.equal(await field(panel, 'limit').getAttribute('type'), 'number');
    assert.equal(await field(panel, 'limit').getAttribute('placeholder'), '20');
    assert.match(await fieldBox(panel, 'limit').locator('small').textContent(), /At most this many tools\. · default: 20$/);
    await choose(panel, 'call_tool');
    assert.equal(await field(panel, 'arguments').evaluate((e) => e.tagName), 'TEXTAREA');
    await field(panel, 'name').fill('nope');
    await field(panel, 'arguments').fill('{}');
    const error = await call(panel);
    assert.equal(await error.getAttribute('class'), 'result error');
    assert.equal(await error.locator('h5').textContent(), 'JSON-RPC error -32602');
    assert.equal(await error.locator('p').textContent(), 'Invalid params: unknown tool "nope"');
    await shot(panel, 'console-try-jsonrpc-error');
    await field(panel, 'name').fill('echo');
    await field(panel, 'arguments').fill('{"message": "through the catalog"}');
    const result = await call(panel);
    assert.equal(JSON.parse(await result.locator('pre.structured').textContent()).message, 'through the catalog');
    const sent = JSON.parse(v.mcp.filter((r) => r.body?.includes('"tools/call"')).at(-1).body);
    assert.deepEqual(sent.params.arguments, { name: 'echo', arguments: { message: 'through the catalog' } });
    assert.deepEqual(v.errors, []);
  } finally {
    await closePage(v.page);
  }
});

test('code mode: search shows TypeScript, execute runs a program typed into the form', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/code/mcp');
    await connect(panel);
    assert.deepEqual(await panel.locator('select.tool option').allTextContents(), ['Search tools (search)', 'Run a program (execute)']);
    await choose(panel, 'search');
    await field(panel, 'query').fill('path and query');
    const found = await call(panel);
    assert.match(await found.textContent(), /declare const tools: \{/);
    await choose(panel, 'execute');
    assert.equal(await field(panel, 'code').evaluate((e) => e.tagName), 'TEXTAREA');
    await field(panel, 'code').fill('const r = await tools.inspect({ id: 3 });\nconsole.log("seen", r.path);\nreturn r.path;');
    const result = await call(panel);
    assert.deepEqual(JSON.parse(await result.locator('pre.structured').textContent()), { result: '/inspect/3', logs: ['seen /inspect/3'] });
    await shot(panel, 'console-try-code-mode');
    assert.deepEqual(v.errors, []);
  } finally {
    await closePage(v.page);
  }
});

test('a stateless server: no session id, and the call works', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/stateless/mcp');
    await connect(panel);
    await choose(panel, 'echo');
    await field(panel, 'message').fill('no session');
    const result = await call(panel);
    assert.equal(JSON.parse(await result.locator('pre.structured').textContent()).message, 'no session');
    assert.ok(v.mcp.every((r) => (r.status === 200 || r.status === 202) && r.session === undefined));
    assert.deepEqual(v.errors, []);
  } finally {
    await closePage(v.page);
  }
});

test('an image result is shown as an image', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/tools/mcp');
    await connect(panel);
    await choose(panel, 'image');
    const result = await call(panel);
    const img = result.locator('img');
    assert.match(await img.getAttribute('src'), /^data:image\/png;base64,iVBORw0KGgo/);
    assert.equal(await img.evaluate((i) => i.complete && i.naturalWidth), 1);
    await shot(panel, 'console-try-image');
    assert.deepEqual(v.errors, []);
    assert.deepEqual(v.foreign, []);
  } finally {
    await closePage(v.page);
  }
});

test('a server with static bearer tokens: refused without one, clear about it, and working with one', async () => {
  const v = await visit(server.url.origin);
  try {
    const panel = await panelOf(v.page, '/auth/mcp');
    assert.equal(await panel.locator('label[for$="-token"]').textContent(), 'Bearer token');
    // No token: the server's 401, with what to do.
    assert.equal(await connect(panel), 'Not connected.');
    const refused = panel.locator('.output .result.error');
    assert.equal(await refused.locator('h5').textContent(), 'Refused');
    assert.equal(await refused.locator('p').textContent(), 'HTTP 401: Unauthorized. The server needs a valid credential: enter a token above, then connect again.');
    assert.ok(await panel.locator('.tool-box').isHidden());
    await shot(panel, 'console-try-token-missing');
    // A token without the server's role: its 403.
    assert.equal(await connect(panel, TOKENS.VISITOR_TOKEN), 'Not connected.');
    assert.match(await refused.locator('p').textContent(), /^HTTP 403: Forbidden: this server needs the role bot\./);
    // The right token: the tools the page did not list, and a call as that principal.
    assert.match(await connect(panel, TOKENS.BOT_TOKEN), /^Connected to .*: 2 tools\.$/);
    assert.deepEqual(await panel.locator('select.tool option').allTextContents(), ['echo', 'whoami']);
    await choose(panel, 'whoami');
    const result = await call(panel);
    assert.equal(JSON.parse(await result.locator('pre.structured').textContent()).path, '/mirror/bot/bot');
    await shot(panel, 'console-try-token');
    // The token went in the Authorization header, and nowhere on the page.
    const admitted = v.mcp.filter((r) => r.status === 200);
    assert.ok(admitted.length >= 3);
    assert.ok(admitted.every((r) => r.authorization === `Bearer ${TOKENS.BOT_TOKEN}`));
    assert.deepEqual(v.mcp.filter((r) => r.status === 401).map((r) => r.authorization), [undefined]);
    assert.ok(!(await v.page.content()).includes(TOKENS.BOT_TOKEN));
    assert.equal(await panel.locator('input[type=password]').inputValue(), TOKENS.BOT_TOKEN);
    // Chromium reports each refused fetch; nothing else went wrong.
    assert.deepEqual(v.errors.filter((e) => !/status of 40[13]/.test(e)), []);
    assert.equal(v.errors.length, 2);
    assert.deepEqual(v.foreign, []);
  } finally {
    await closePage(v.page);
  }
});

test('the page works without its script: read-only, panels hidden', async () => {
  const page = await browser.newPage();
  try {
    await page.route(/\/console\.[0-9a-f]+\.js$/, (route) => route.abort('blockedbyclient'));
    await open(page, `${server.url.origin}/`);
    await page.waitForLoadState('load');
    assert.equal(await page.locator('div.try').count(), config.servers.length);
    assert.equal(await page.locator('div.try:visible').count(), 0);
    assert.ok(await page.locator('#server-0 article.tool').first().isVisible());
  } finally {
    await closePage(page);
  }
});

test('the page’s own origin is let in when the allowlist leaves loopback out; no other origin is', async () => {
  const upstream = await startTestUpstream();
  const only = { ...config.servers[0], allowedOrigins: ['https://app.example'] };
  const path = join(mkdtempSync(join(tmpdir(), 'mcp-edge-try-')), 'mcp-edge.json');
  writeFileSync(path, JSON.stringify({ servers: [only] }));
  const { mf, url } = await startMiniflare({ config: path, upstreamUrl: upstream.url });
  try {
    const v = await visit(url.origin);
    try {
      const panel = await panelOf(v.page, '/mcp');
      assert.match(await connect(panel), /^Connected/);
      await choose(panel, 'echo');
      await field(panel, 'message').fill('same origin');
      const result = await call(panel);
      assert.equal(JSON.parse(await result.locator('pre.structured').textContent()).message, 'same origin');
      assert.ok(v.mcp.every((r) => r.origin === url.origin && r.status < 300));
      assert.deepEqual(v.errors, []);
    } finally {
      await closePage(v.page);
    }
    // Another loopback origin, which the default list would let in, is refused, with a preflight too.
    const mcp = new URL('/mcp', url);
    const other = await post(mcp, INIT, { origin: 'http://127.0.0.1:1' });
    assert.equal(other.status, 403);
    await other.body?.cancel();
    const preflight = await fetch(mcp, { method: 'OPTIONS', headers: { origin: 'http://evil.test', 'access-control-request-method': 'POST' } });
    assert.equal(preflight.status, 403);
    assert.equal(preflight.headers.get('access-control-allow-origin'), null);
    await preflight.body?.cancel();
    const listed = await post(mcp, INIT, { origin: 'https://app.example' });
    assert.equal(listed.status, 200);
    assert.equal(listed.headers.get('access-control-allow-origin'), 'https://app.example');
    await listed.body?.cancel();
  } finally {
    await mf.dispose();
    await upstream.close();
  }
});

test('a traced server: each result shows its trace id, linked through telemetry.traceLink', async () => {
  const collector = await startCollector();
  const upstream = await startTestUpstream();
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-console-trace-'));
  const file = join(dir, 'mcp-edge.json');
  const traced = { ...config, telemetry: { otlp: { endpoint: collector.endpoint }, traceLink: 'https://grafana.example.com/explore?traceId={traceId}&from=now-1h' } };
  writeFileSync(file, JSON.stringify(traced));
  const worker = await startMiniflare({ config: file, upstreamUrl: upstream.url });
  const v = await visit(worker.url.origin);
  try {
    const panel = await panelOf(v.page, '/mcp');
    await connect(panel);
    await choose(panel, 'echo');
    await field(panel, 'message').fill('traced from the console');
    await call(panel);
    const link = panel.locator('.output p.trace a');
    await link.waitFor();
    const traceId = await link.textContent();
    assert.match(traceId, /^[0-9a-f]{32}$/);
    assert.equal(await link.getAttribute('href'), `https://grafana.example.com/explore?traceId=${traceId}&from=now-1h`);
    assert.equal(await link.getAttribute('rel'), 'noopener');
    // The id is the trace the server recorded the call in: its server span reached the collector.
    const server = await collector.waitForSpans((spans) => spans.find((s) => s.traceId === traceId && s.name === 'tools/call echo'), { what: `the trace ${traceId}` });
    assert.equal(server.kind, 'SERVER');
    await shot(panel, 'console-try-trace');
    // Nothing left for the link's origin: it is only a link.
    assert.deepEqual(v.foreign, []);
    assert.deepEqual(v.errors, []);
  } finally {
    await closePage(v.page);
    await worker.mf.dispose();
    await upstream.close();
    await collector.close();
  }
});
