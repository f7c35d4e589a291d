// The console's admin page (src/console/admin.js) in a real headless Chromium, against the test
// worker in workerd with the admin token set and a real upstream on 127.0.0.1. The admin signs in
// through the page's own form; the editor adds a tool (the page and an MCP tools/list then show
// it, and it can be called), an invalid change is refused with its errors at their paths and
// nothing changes, invalid JSON never leaves the page, an edit made stale by a change through the
// API gets the 412 message, Delete asks first, and the history lists every version with who and
// when, where a rollback removes the tool again. A wrong token is refused with the page's notice,
// and a visitor gets neither the admin section nor its script. Screenshots of each state go to
// .mcp-edge/test-output/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSession, post, startMiniflare } from '../e2e/harness.mjs';
import { startTestUpstream } from '../e2e/upstream.mjs';
import { OUTPUT_DIR, launchBrowser, open, screenshot } from '../oauth/browser.mjs';

const ADMIN_TOKEN = 'admin-token-console-2c9d-7f30e18ab94c56d2';
const SERVER = 'admin-demo';
const echo = (name, description) => ({
  name,
  description,
  inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'The text to echo' } }, required: ['message'] },
  http: { method: 'POST', url: '{+env.UPSTREAM_URL}/echo' },
});
const CONFIG = {
  servers: [
    {
      route: '/mcp',
      name: SERVER,
      title: 'Admin demo',
      version: '1',
      privateUpstreams: ['127.0.0.1', 'localhost'],
      tools: [echo('echo', 'Echoes a message.')],
      resources: [{ uri: 'docs://readme', name: 'readme', mimeType: 'text/plain', text: 'Hello' }],
      prompts: [{ name: 'greet', description: 'Greets someone.', arguments: [{ name: 'who', required: true }], messages: [{ role: 'user', content: { type: 'text', text: 'Say hello to {who}.' } }] }],
    },
    { route: '/second/mcp', name: 'second', version: '1', privateUpstreams: ['127.0.0.1'], tools: [echo('second_echo', 'Echoes too.')] },
  ],
};
const ADDED = echo('added_live', 'Added from the console.');

let browser;
let upstream;
let worker;
let origin;
let mcpUrl;
let page;
let seen;
before(async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'mcp-edge-admin-page-')), 'mcp-edge.json');
  writeFileSync(path, JSON.stringify(CONFIG));
  upstream = await startTestUpstream();
  worker = await startMiniflare({ config: path, upstreamUrl: upstream.url, bindings: { MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  origin = worker.url.origin;
  mcpUrl = new URL('/mcp', worker.url);
  browser = await launchBrowser();
  page = await browser.newPage();
  // What the page did since the last `watch()`: errors, requests to other origins, and its
  // requests to the admin API.
  page.on('console', (m) => m.type() === 'error' && seen.errors.push(m.text()));
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.origin !== origin) seen.foreign.push(r.url());
    if (url.pathname.startsWith('/admin/api/')) seen.api.push({ method: r.method(), path: url.pathname, ifMatch: r.headers()['if-match'] });
  });
  page.on('dialog', (d) => (seen.dialogs.push(d.message()), seen.answer ? d.accept() : d.dismiss()));
  watch();
});
after(async () => {
  await browser?.close();
  await worker?.mf.dispose();
  await upstream?.close();
});

function watch(answer = true) {
  seen = { errors: [], foreign: [], api: [], dialogs: [], answer };
}

/** Saves a screenshot of one element as .mcp-edge/test-output/<name>.png. */
async function shot(locator, name) {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  const path = join(OUTPUT_DIR, `${name}.png`);
  await locator.screenshot({ path });
  console.log(`screenshot: ${path}`);
}

/** The admin API with the bearer token, as automation uses it. */
async function api(path, { method = 'GET', body, headers = {} } = {}) {
  const res = await fetch(new URL(`/admin/api${path}`, worker.url), {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, etag: res.headers.get('etag'), json: await res.json() };
}

let ids = 1;
/** An MCP request in a fresh session, as any client makes it; the JSON-RPC result. */
async function mcp(method, params) {
  const session = await openSession(mcpUrl);
  const res = await post(mcpUrl, { jsonrpc: '2.0', id: ids++, method, ...(params && { params }) }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  assert.equal(res.status, 200);
  const reply = await res.json();
  assert.equal(reply.error, undefined, JSON.stringify(reply.error));
  return reply.result;
}
const toolNames = async () => (await mcp('tools/list')).tools.map((t) => t.name).sort();

const adminSection = () => page.locator('section#admin');
const panel = () => page.locator('#admin-panel');
const serverBox = (name = SERVER) => page.locator(`.admin-server[data-server="${name}"]`);
const row = (kind, name) => serverBox().locator(`li[data-kind="${kind}"][data-name="${name}"]`);
/** The tool cards of the page's section for SERVER, as rendered by the server. */
const pageTools = async () => (await page.locator('section.server#server-0 article.tool h4 code').allTextContents()).sort();

/** Waits for the admin script to have filled the panel. */
async function ready() {
  await serverBox('second').waitFor();
}

/** Clicks `locator`, which saves a change and reloads the page; waits for the page it reloads. */
async function saveAndReload(locator) {
  const loaded = page.waitForEvent('load');
  await locator.click();
  await loaded;
  await ready();
}

test('a visitor sees no admin section, and no admin script', async () => {
  const res = await open(page, `${origin}/`);
  assert.equal(res.status(), 200);
  await page.waitForLoadState('load');
  assert.equal(await adminSection().count(), 0);
  assert.equal(await panel().count(), 0);
  assert.equal(await page.locator('script[src^="/console-admin."]').count(), 0);
  assert.ok(!(await res.text()).includes('console-admin'));
  // The way in is offered, folded in the header.
  assert.equal(await page.locator('details.signin summary').textContent(), 'Admin sign-in');
  await screenshot(page, 'console-admin-visitor');
});

/**
 * Signs in through the header's form with `token`. Resolves with the form's answer, and `home`:
 * the console's next response, which a successful sign-in refreshes to.
 */
async function signIn(token) {
  await open(page, `${origin}/`);
  await page.locator('details.signin summary').click();
  await page.locator('#admin-token').fill(token);
  const answered = page.waitForResponse((r) => r.url() === `${origin}/console/signin` && r.request().method() === 'POST');
  const home = page.waitForResponse((r) => r.url() === `${origin}/`);
  home.catch(() => {});
  await page.locator('form.token button').click();
  return { res: await answered, home };
}

test('a wrong admin token is refused on the page, with no admin section', async () => {
  const { res } = await signIn(`${ADMIN_TOKEN}-not`);
  assert.equal(res.status(), 401);
  await page.locator('p.notice').waitFor();
  assert.equal(await page.locator('p.notice').textContent(), 'That is not the admin token.');
  assert.equal(await adminSection().count(), 0);
  assert.equal(await page.locator('script[src^="/console-admin."]').count(), 0);
  const cookies = await browser.context.cookies(origin);
  assert.ok(!cookies.some((c) => c.name === 'mcp_edge_console'), 'no session cookie');
  await screenshot(page, 'console-admin-wrong-token');
});

test('the admin signs in with the admin token; the page loads the editor with no console error and nothing from another origin', async () => {
  watch();
  const { res, home } = await signIn(ADMIN_TOKEN);
  assert.equal(res.status(), 200);
  // The answer sets the cookie and refreshes to the console.
  const csp = (await home).headers()['content-security-policy'];
  await page.waitForURL(`${origin}/`);
  await ready();
  await page.waitForLoadState('load');
  assert.equal(await page.locator('.account').textContent(), 'Signed in as operator adminSign out');
  assert.equal(await page.locator('#config-version').textContent(), 'version 0');
  // The admin script: the file as written, allowed by the page's CSP by its exact URL and pinned
  // by its hash.
  const tag = page.locator('script[src^="/console-admin."]');
  const src = await tag.getAttribute('src');
  const source = await (await fetch(new URL(src, origin))).text();
  assert.equal(source, readFileSync(new URL('../../src/console/admin.js', import.meta.url), 'utf8'));
  assert.equal(await tag.getAttribute('integrity'), `sha256-${createHash('sha256').update(source).digest('base64')}`);
  assert.match(csp, new RegExp(`script-src \\S+ ${origin}${src.replace(/[.]/g, '\\.')};`));
  assert.equal(await panel().isVisible(), true);
  // Every server, with each of its entries, from the API.
  assert.deepEqual(await serverBox().locator('li').evaluateAll((ls) => ls.map((l) => `${l.dataset.kind}:${l.dataset.name}`)), ['tools:echo', 'resources:readme', 'prompts:greet']);
  assert.deepEqual(await serverBox('second').locator('li code').allTextContents(), ['second_echo']);
  assert.equal(await serverBox().locator('li button.edit').count(), 3);
  assert.equal(await serverBox().locator('li button.delete').count(), 3);
  assert.deepEqual(seen.api.map((r) => `${r.method} ${r.path}`).sort(), ['GET /admin/api/pins', 'GET /admin/api/servers', 'GET /admin/api/servers/admin-demo', 'GET /admin/api/servers/second']);
  await screenshot(page, 'console-admin-signed-in');
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.foreign, []);
});

test('Add tool: the editor starts from a template; Save stores it, the page and tools/list show it, and it can be called', async () => {
  assert.deepEqual(await toolNames(), ['echo']);
  await serverBox().locator('select.add-kind').selectOption('tools');
  await serverBox().locator('button.add').click();
  const editor = serverBox().locator('.editor');
  const template = JSON.parse(await editor.locator('textarea').inputValue());
  assert.equal(template.name, 'new_tool');
  assert.equal(template.inputSchema.type, 'object');
  await editor.locator('textarea').fill(JSON.stringify(ADDED, null, 2));
  await shot(adminSection(), 'console-admin-add');
  watch();
  await saveAndReload(editor.locator('button.save'));
  const post = seen.api.find((r) => r.method === 'POST');
  assert.deepEqual(post, { method: 'POST', path: `/admin/api/servers/${SERVER}/tools`, ifMatch: '"v0"' });
  // After the reload: the version saved, the badge, the server's section and the editor's list.
  assert.match(await page.locator('#admin-status').textContent(), /^version 1 saved: created tool "added_live" on "admin-demo"$/);
  assert.equal(await page.locator('#config-version').textContent(), 'version 1');
  assert.deepEqual(await pageTools(), ['added_live', 'echo']);
  assert.equal(await row('tools', 'added_live').count(), 1);
  assert.equal(await serverBox().locator('.badge').first().textContent(), 'live');
  assert.deepEqual(await toolNames(), ['added_live', 'echo']);
  const result = await mcp('tools/call', { name: 'added_live', arguments: { message: 'hi from the console' } });
  assert.ok(!result.isError, JSON.stringify(result));
  assert.match(JSON.stringify(result.content), /hi from the console/);
  await screenshot(page, 'console-admin-added');
  assert.deepEqual(seen.errors, []);
});

/** Opens the editor on an entry; resolves with its textarea once it holds the entry. */
async function edit(kind, name) {
  await row(kind, name).locator('button.edit').click();
  const text = serverBox().locator('.editor textarea');
  await text.waitFor();
  assert.equal(JSON.parse(await text.inputValue()).name, name);
  return text;
}

test('invalid JSON is caught on the page; an invalid change shows its errors at their paths, and nothing changes', async () => {
  const text = await edit('tools', 'added_live');
  const errors = serverBox().locator('.editor ul.errors li');
  // Not JSON: the parser's message, and no request.
  watch();
  await text.fill('{"name": "added_live", "description": }');
  await serverBox().locator('.editor button.save').click();
  await errors.first().waitFor();
  assert.match(await errors.first().textContent(), /^The JSON is not valid: .*JSON/);
  assert.equal(await serverBox().locator('.editor .result.error').textContent(), `Not saved${await errors.first().textContent()}`);
  assert.deepEqual(seen.api, []);
  await shot(adminSection(), 'console-admin-invalid-json');
  // Valid JSON, invalid configuration: refused with the fault's path in the entry and in the file.
  const broken = { ...ADDED, description: 'Broken.', http: { method: 'POST', url: '{+env.UPSTREAM_URL}/echo/{nope}' } };
  await text.fill(JSON.stringify(broken, null, 2));
  const refused = page.waitForResponse((r) => r.request().method() === 'PUT');
  await serverBox().locator('.editor button.save').click();
  assert.equal((await refused).status(), 400);
  await errors.filter({ hasText: 'nope' }).waitFor();
  assert.equal(await errors.count(), 1);
  assert.equal(await errors.locator('code.path').textContent(), 'http.url');
  assert.match(await errors.textContent(), /^http\.url unknown argument "nope" in template \(servers\[0\]\.tools\[\d+\]\.http\.url in the configuration\)$/);
  assert.equal(await serverBox().locator('.editor .result.error').textContent(), `Not saved${await errors.textContent()}`);
  assert.deepEqual(seen.api.at(-1), { method: 'PUT', path: `/admin/api/servers/${SERVER}/tools/added_live`, ifMatch: '"v1"' });
  // The editor marks where the fault is.
  assert.equal(await text.evaluate((t) => t.value.slice(t.selectionStart, t.selectionEnd)), '"url"');
  assert.equal(await text.evaluate((t) => t.classList.contains('invalid')), true);
  await shot(adminSection(), 'console-admin-invalid');
  // Nothing changed: the version, the tools, the tool's description.
  assert.equal((await api('/servers')).etag, '"v1"');
  assert.deepEqual(await toolNames(), ['added_live', 'echo']);
  assert.equal((await api(`/servers/${SERVER}/tools/added_live`)).json.description, 'Added from the console.');
});

test('an edit made stale by a change through the API is refused with the 412 message', async () => {
  await page.reload();
  await ready();
  const text = await edit('tools', 'added_live');
  // Someone else (automation, with the bearer token) changes the tool after it was opened here.
  const other = await api(`/servers/${SERVER}/tools/added_live`, { method: 'PUT', body: { ...ADDED, description: 'Changed through the API.' }, headers: { 'if-match': '"v1"' } });
  assert.equal(other.status, 200, JSON.stringify(other.json));
  assert.equal(other.json.version, 2);
  await text.fill(JSON.stringify({ ...ADDED, description: 'Changed in the console.' }, null, 2));
  const refused = page.waitForResponse((r) => r.request().method() === 'PUT');
  await serverBox().locator('.editor button.save').click();
  assert.equal((await refused).status(), 412);
  const error = serverBox().locator('.editor ul.errors li');
  await error.waitFor();
  assert.match(await error.textContent(), /^The configuration changed since you opened it: reload, then make your change again\. The configuration changed since the version you read; the current one is "v2"/);
  assert.equal(await serverBox().locator('.editor button', { hasText: 'Reload' }).count(), 1);
  await shot(adminSection(), 'console-admin-stale');
  // The API's change stands.
  assert.equal((await api(`/servers/${SERVER}/tools/added_live`)).json.description, 'Changed through the API.');
});

test('Delete asks first: dismissed, nothing happens; accepted, the prompt is gone', async () => {
  await page.reload();
  await ready();
  assert.equal(await page.locator('#config-version').textContent(), 'version 2');
  watch(false);
  const asked = page.waitForEvent('dialog');
  await row('prompts', 'greet').locator('button.delete').click();
  await asked;
  assert.deepEqual(seen.dialogs, ['Delete the prompt "greet"? Connected clients are told; History can bring it back.']);
  assert.ok(!seen.api.some((r) => r.method === 'DELETE'));
  assert.equal((await api('/servers')).etag, '"v2"');
  watch(true);
  await saveAndReload(row('prompts', 'greet').locator('button.delete'));
  assert.deepEqual(seen.api.find((r) => r.method === 'DELETE'), { method: 'DELETE', path: `/admin/api/servers/${SERVER}/prompts/greet`, ifMatch: '"v2"' });
  assert.match(await page.locator('#admin-status').textContent(), /^version 3 saved: deleted prompt "greet"/);
  assert.equal(await row('prompts', 'greet').count(), 0);
  assert.deepEqual((await mcp('prompts/list')).prompts, []);
});

test('History lists every version with who and when; rolling back to the file removes the tool again', async () => {
  const history = page.locator('details.history');
  await history.locator('summary').click();
  const rows = history.locator('tbody tr');
  await rows.first().waitFor();
  const cells = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(cells.map((c) => c[0]), ['3', '2', '1', '0']);
  for (const c of cells.slice(0, 3)) {
    assert.equal(c[2], 'admin-token');
    assert.match(c[1], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    // When: today, give or take the test's own run (the worker's clock is this machine's).
    assert.equal(c[1].slice(0, 10), new Date().toISOString().slice(0, 10));
  }
  assert.deepEqual(cells.map((c) => c[3]), ['deleted prompt "greet" from "admin-demo"', 'replaced tool "added_live" on "admin-demo"', 'created tool "added_live" on "admin-demo"', 'the bundled configuration file']);
  assert.deepEqual(cells.at(-1).slice(1, 3), ['deployed', 'the bundled file']);
  // The version served now has no rollback; every older one has.
  assert.equal(await rows.nth(0).locator('button.rollback').count(), 0);
  assert.equal(await history.locator('button.rollback').count(), 3);
  await shot(adminSection(), 'console-admin-history');
  watch(true);
  await saveAndReload(history.locator('tr[data-version="0"] button.rollback'));
  assert.deepEqual(seen.dialogs, ['Roll back to version 0? A new version will serve what it served.']);
  assert.deepEqual(seen.api.find((r) => r.method === 'POST'), { method: 'POST', path: '/admin/api/versions/0/rollback', ifMatch: '"v3"' });
  assert.match(await page.locator('#admin-status').textContent(), /^version 4 saved: rolled back to the bundled file \(version 0\)/);
  assert.equal(await page.locator('#config-version').textContent(), 'version 4');
  assert.deepEqual(await pageTools(), ['echo']);
  assert.equal(await row('tools', 'added_live').count(), 0);
  assert.equal(await row('prompts', 'greet').count(), 1);
  assert.equal(await serverBox().locator('.badge').first().textContent(), 'from the file');
  assert.deepEqual(await toolNames(), ['echo']);
  await page.locator('details.history summary').click();
  await page.locator('details.history tbody tr').first().waitFor();
  await screenshot(page, 'console-admin-rolled-back');
  assert.deepEqual(seen.errors, []);
});
