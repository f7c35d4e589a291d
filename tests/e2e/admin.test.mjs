// The admin API and live changes (issue 22, part 3), against the test worker in workerd with a
// real upstream: tools created, replaced and deleted without a deploy; versions with ETag and
// If-Match (412 on a stale write); invalid changes refused whole (400 with paths); history and
// rollback; the official SDK client told with notifications/tools/list_changed on its GET stream,
// a 2026-07-28 listen stream told too, and n8n-nodes-mcp listing the new tool on its next run.
// Abuse cases: no token, a wrong token, another origin, wrong media type, oversized and
// malformed bodies; and the API is off (404) without the admin token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startServer, root, run, sseEvents } from './harness.mjs';
import { n8nNode } from './clients.mjs';

const ADMIN_TOKEN = 'admin-token-e2e-6b1f-0c9d4e2a7b3f5810';
const SERVER = 'mcp-edge-test';

let server;
before(async () => {
  server = await startServer({ bindings: { MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
});
after(() => server.close());

/** A request to the admin API; `token: null` sends no Authorization. */
async function admin(path, { method = 'GET', body, token = ADMIN_TOKEN, headers = {} } = {}) {
  const res = await fetch(new URL(`/admin/api${path}`, server.url), {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

/** A tool that calls the test upstream's echo, under another name. */
const liveTool = (name) => ({
  name,
  description: 'Added live through the admin API.',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  http: { url: '{+env.UPSTREAM_URL}/echo', headers: { 'X-Api-Key': '{env.API_KEY}' } },
});

const toolNames = async () => (await admin(`/servers/${SERVER}/tools`)).json.map((t) => t.name);

/** Waits until `predicate()` holds, polling; fails after `ms`. */
async function until(predicate, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('abuse: no token, a wrong token and another origin are refused; the API has its own JSON errors', async () => {
  const none = await admin('/servers', { token: null });
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="mcp-edge-admin"');
  assert.equal(none.json.error.code, 'unauthorized');
  const wrong = await admin('/servers', { token: `${ADMIN_TOKEN}x` });
  assert.equal(wrong.status, 401);
  // An MCP server's static token is not the admin token.
  assert.equal((await admin('/servers', { token: 'admin-key-77e0' })).status, 401);
  const forged = await admin('/servers', { token: 'mcpe_at.eyJzdWIiOiJ4In0.AAAA' });
  assert.equal(forged.status, 401);
  const foreign = await admin('/servers', { headers: { origin: 'https://evil.example' } });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.headers.get('access-control-allow-origin'), null);
  assert.equal((await admin('/nothing')).status, 404);
  assert.equal((await admin('/servers/nobody')).status, 404);
  assert.equal((await admin('/versions', { method: 'DELETE' })).status, 405);
  // The token never comes back.
  for (const r of [none, wrong, foreign]) assert.ok(!JSON.stringify(r.json).includes(ADMIN_TOKEN));
});

test('abuse: wrong media type, malformed and oversized bodies change nothing', async () => {
  const before = await admin('/servers');
  const textBody = await fetch(new URL(`/admin/api/servers/${SERVER}/tools`, server.url), { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' }, body: '{}' });
  assert.equal(textBody.status, 415);
  const malformed = await admin(`/servers/${SERVER}/tools`, { method: 'POST', body: '{"name": ' });
  assert.equal(malformed.status, 400);
  assert.equal(malformed.json.error.code, 'bad_request');
  const huge = await admin(`/servers/${SERVER}/tools`, { method: 'POST', body: { ...liveTool('huge'), description: 'x'.repeat(1_100_000) } });
  assert.equal(huge.status, 413);
  assert.equal((await admin('/servers')).headers.get('etag'), before.headers.get('etag'));
});

test('a live tool: the SDK client hears list_changed, n8n lists it, a stale If-Match gets 412, an invalid change 400 with paths, rollback removes it', { timeout: 180_000 }, async () => {
  // Connected before the change, with its GET stream open.
  const client = new Client({ name: 'live-e2e', version: '1' });
  const changed = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changed.push(n));
  const transport = new StreamableHTTPClientTransport(server.mcpUrl);
  await client.connect(transport);
  // 2026-07-28: a listen stream that asks for tool list changes.
  const controller = new AbortController();
  const listen = await fetch(server.mcpUrl, {
    method: 'POST',
    signal: controller.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'live-1',
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'listen', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} } },
    }),
  });
  const events = sseEvents(listen);
  try {
    assert.deepEqual(client.getServerCapabilities().tools, { listChanged: true });
    const ack = JSON.parse((await events.next()).value.data);
    assert.deepEqual(ack.params.notifications, { toolsListChanged: true });
    const original = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!original.includes('added_live'));
    // The GET stream is open before the change (the SDK opens it after initialized).
    await new Promise((r) => setTimeout(r, 500));

    const start = await admin('/servers');
    assert.equal(start.status, 200);
    const etag = start.headers.get('etag');
    assert.match(etag, /^"v\d+"$/);
    const mine = start.json.servers.find((s) => s.name === SERVER);
    assert.equal(mine.tools, original.length);

    const created = await admin(`/servers/${SERVER}/tools`, { method: 'POST', body: liveTool('added_live'), headers: { 'if-match': etag } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal(created.json.summary, `created tool "added_live" on "${SERVER}"`);
    assert.equal(created.json.by, 'admin-token');
    const v1 = created.headers.get('etag');
    assert.notEqual(v1, etag);

    // This isolate serves it at once; the sessions are told once every isolate may serve it.
    await until(() => changed.length > 0, 15_000, 'notifications/tools/list_changed on the SDK client');
    const tools = (await client.listTools()).tools;
    assert.ok(tools.some((t) => t.name === 'added_live' && t.description === 'Added live through the admin API.'));
    const result = await client.callTool({ name: 'added_live', arguments: { message: 'live!' } });
    assert.deepEqual(result.structuredContent, { message: 'live!' });
    const heard = JSON.parse((await events.next()).value.data);
    assert.deepEqual(heard, { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'live-1' } } });

    // n8n-nodes-mcp, on its next run, lists it.
    const dir = n8nNode(undefined);
    const n8n = await run(process.execPath, [join(root, 'tests', 'e2e', 'n8n_node.cjs'), dir, 'http', 'listTools', server.mcpUrl.href]);
    assert.equal(n8n.status, 0, n8n.stderr);
    assert.ok(JSON.parse(n8n.stdout).output[0][0].json.tools.some((t) => t.name === 'added_live'));

    // A stale If-Match: 412, nothing changes.
    const stale = await admin(`/servers/${SERVER}/tools/added_live`, { method: 'PUT', body: { ...liveTool('added_live'), description: 'stale' }, headers: { 'if-match': etag } });
    assert.equal(stale.status, 412);
    assert.equal(stale.json.error.code, 'stale_version');
    assert.equal((await admin(`/servers/${SERVER}/tools/added_live`)).json.description, 'Added live through the admin API.');

    // An invalid change: 400 with the path in the body and in the file; nothing changes.
    const names = await toolNames();
    const invalid = await admin(`/servers/${SERVER}/tools`, { method: 'POST', body: { ...liveTool('broken'), http: { url: '{+env.UPSTREAM_URL}/echo/{nope}' } }, headers: { 'if-match': v1 } });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.error.code, 'invalid_configuration');
    assert.equal(invalid.json.error.path, 'http.url');
    assert.match(invalid.json.error.configPath, /^servers\[0\]\.tools\[\d+\]\.http\.url$/);
    assert.equal(invalid.json.error.message, 'unknown argument "nope" in template');
    assert.deepEqual(await toolNames(), names);
    assert.equal(invalid.headers.get('etag'), null);
    assert.equal((await admin('/servers')).headers.get('etag'), v1);

    // History: who, when, what; then a rollback to the version before the tool.
    const history = await admin('/versions');
    const [latest] = history.json.versions;
    assert.equal(`"v${latest.version}"`, v1);
    assert.equal(latest.by, 'admin-token');
    assert.deepEqual(latest.servers, [SERVER]);
    assert.ok(Math.abs(latest.atMs - Date.now()) < 60_000);
    assert.equal(history.json.versions.at(-1).version, 0);
    const previous = Number(etag.slice(2, -1));
    changed.length = 0;
    const rolled = await admin(`/versions/${previous}/rollback`, { method: 'POST', headers: { 'if-match': v1 } });
    assert.equal(rolled.status, 200, JSON.stringify(rolled.json));
    assert.ok(!(await toolNames()).includes('added_live'));
    await until(() => changed.length > 0, 15_000, 'list_changed after the rollback');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), original);
  } finally {
    controller.abort();
    await client.close();
  }
});

test('a server replaced whole keeps its name and routes; DELETE returns it to the file', async () => {
  // Whatever an earlier test left live goes first.
  if ((await admin('/servers')).json.servers.find((s) => s.name === SERVER).live) await admin(`/servers/${SERVER}`, { method: 'DELETE' });
  const current = (await admin(`/servers/${SERVER}`)).json;
  assert.equal(current.name, SERVER);
  const renamed = await admin(`/servers/${SERVER}`, { method: 'PUT', body: { ...current, name: 'other' } });
  assert.equal(renamed.status, 400);
  assert.equal(renamed.json.error.path, 'name');
  const moved = await admin(`/servers/${SERVER}`, { method: 'PUT', body: { ...current, route: '/moved/mcp' } });
  assert.equal(moved.status, 400);
  assert.equal(moved.json.error.path, 'route');
  const replaced = await admin(`/servers/${SERVER}`, { method: 'PUT', body: { ...current, version: '9.9.9', tools: current.tools.filter((t) => t.name === 'echo') } });
  assert.equal(replaced.status, 200, JSON.stringify(replaced.json));
  assert.deepEqual(await toolNames(), ['echo']);
  assert.equal((await admin('/servers')).json.servers.find((s) => s.name === SERVER).live, true);
  const reset = await admin(`/servers/${SERVER}`, { method: 'DELETE' });
  assert.equal(reset.status, 200);
  assert.equal(reset.json.summary, `returned "${SERVER}" to the bundled file`);
  assert.deepEqual(await toolNames(), current.tools.map((t) => t.name));
  assert.equal((await admin(`/servers/${SERVER}`, { method: 'DELETE' })).status, 404);
});

test('without the admin token the admin API is off and lists do not change', async () => {
  const plain = await startServer();
  try {
    const res = await fetch(new URL('/admin/api/servers', plain.url), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 404);
    assert.match((await res.json()).error.message, /the admin API is off/);
    const client = new Client({ name: 'off', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(plain.mcpUrl));
    assert.deepEqual(client.getServerCapabilities().tools, { listChanged: false });
    await client.close();
  } finally {
    await plain.close();
  }
});
