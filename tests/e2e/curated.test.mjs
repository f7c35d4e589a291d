// Curated servers (`include`): one deployment, three audiences. `admin` (/admin/mcp) has the
// tools themselves and an upstream MCP server (the official server-everything); `support`
// (/support/mcp) takes three of them read-only, renamed, with the account argument hidden and
// pinned server-side, a default and a narrowed enum; `browse` (/browse/mcp) takes one in
// catalog mode. Real parts: workerd, a real HTTP upstream that mirrors what it got, a real
// upstream MCP server, the official TS SDK client. A hidden argument is smuggled every way a
// client could (in `arguments`, in `_meta`, through `call_tool`, as a task, in a 2026-07-28
// `Mcp-Param-*` header): the upstream always gets the pinned value. A live edit of the source
// shows through the alias; the alias's own definition is versioned and rolled back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { openSession, post, startMiniflare } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';
import { freePort, startEverything, startOwn } from './mcp_servers.mjs';

const ADMIN_TOKEN = 'admin-token-curated-4c2e-9f1a0b7d3e5c6a81';

const INVOICE_SCHEMA = {
  type: 'object',
  properties: {
    account_id: { type: 'string', 'x-mcp-header': 'Account' },
    status: { type: 'string', enum: ['open', 'paid', 'void'] },
    limit: { type: 'integer' },
  },
  required: ['account_id', 'status'],
};

const ADMIN = (upstream, everything, growing) => ({
  route: '/admin/mcp',
  name: 'admin',
  version: '1',
  privateUpstreams: ['127.0.0.1', 'localhost'],
  tools: [
    { name: 'get_invoice', title: 'Get invoice', description: 'Any account\'s invoices.', inputSchema: INVOICE_SCHEMA, taskSupport: 'optional', http: { url: `${upstream}/mirror/invoices` } },
    { name: 'search_orders', description: 'Orders of an account.', inputSchema: { type: 'object', properties: { account_id: { type: 'string' }, q: { type: 'string' } }, required: ['account_id'] }, http: { url: `${upstream}/mirror/orders` } },
    { name: 'refund', description: 'Refunds an order.', inputSchema: { type: 'object', properties: { order: { type: 'string' } } }, http: { url: `${upstream}/mirror/refund` } },
  ],
  upstreams: [
    { name: 'everything', url: everything, prefix: 'ev_', tools: { include: ['echo'] }, resources: { include: [] }, prompts: { include: [] } },
    // Lists `work`; a call of it adds `grown` and says so.
    { name: 'growing', url: growing, prefix: 'gro_', prompts: { include: [] } },
  ],
});

const SUPPORT = {
  route: '/support/mcp',
  name: 'support',
  version: '1',
  include: [
    {
      server: 'admin', tool: 'get_invoice', as: 'invoice', title: 'Invoice', description: 'The invoices of our account.',
      annotations: { readOnlyHint: true },
      arguments: { account_id: { hidden: true, value: 'acme' }, status: { default: 'open', enum: ['open', 'paid'] } },
    },
    { server: 'admin', tool: 'search_orders', as: 'orders', annotations: { readOnlyHint: true }, arguments: { account_id: { hidden: true, value: 'acme' } } },
    // An upstream MCP server's tool: taken when its list arrives.
    { server: 'admin', tool: 'ev_echo', as: 'shout', description: 'Says the support line.', annotations: { readOnlyHint: true }, arguments: { message: { hidden: true, value: 'support-line' } } },
    // Not listed yet: it arrives when the upstream grows.
    { server: 'admin', tool: 'gro_grown', as: 'grown_later' },
  ],
};

const BROWSE = {
  route: '/browse/mcp',
  name: 'browse',
  version: '1',
  toolDiscovery: 'catalog',
  include: [{ server: 'admin', tool: 'get_invoice', as: 'invoice', arguments: { account_id: { hidden: true, value: 'acme' } } }],
};

let upstream;
let everything;
let growing;
let worker;
before(async () => {
  upstream = await startTestUpstream();
  everything = await startEverything(await freePort());
  growing = await startOwn('growing');
  const config = { servers: [ADMIN(upstream.url, everything.url, growing.url), SUPPORT, BROWSE] };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-curated-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, bindings: { MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
});
after(async () => {
  await worker?.mf.dispose();
  await everything?.close();
  await growing?.close();
  await upstream?.close();
});

const url = (route) => new URL(route, worker.url);

async function sdk(route) {
  const client = new Client({ name: 'curated-test', version: '1' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(url(route)));
  return client;
}

/** What the mirror upstream got, from a call's structured result. */
function mirrored(result) {
  assert.ok(!result.isError, JSON.stringify(result));
  const sent = result.structuredContent ?? JSON.parse(result.content[0].text);
  return { path: sent.path, body: sent.body ? JSON.parse(sent.body) : null };
}

/** One JSON-RPC request in a session. */
async function rpc(route, sid, method, params, id = 1, headers = {}) {
  const res = await post(url(route), { jsonrpc: '2.0', id, method, params }, { 'mcp-session-id': sid, ...headers });
  assert.equal(res.status, 200, `HTTP ${res.status}`);
  return res.json();
}

async function admin(path, { method = 'GET', body } = {}) {
  const res = await fetch(new URL(`/admin/api${path}`, worker.url), { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

test('the support server lists its three read-only aliases, transformed; the admin server everything', async () => {
  const client = await sdk('/support/mcp');
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['invoice', 'orders', 'shout']);
    const invoice = tools[0];
    assert.equal(invoice.title, 'Invoice');
    assert.equal(invoice.description, 'The invoices of our account.');
    assert.deepEqual(invoice.annotations, { readOnlyHint: true });
    assert.deepEqual(invoice.inputSchema, { type: 'object', properties: { status: { type: 'string', enum: ['open', 'paid'], default: 'open' }, limit: { type: 'integer' } }, required: [] });
    assert.ok(tools.every((t) => t.annotations.readOnlyHint === true));
    assert.ok(!('message' in (tools[2].inputSchema.properties ?? {})));
    assert.equal(tools[2].description, 'Says the support line.');
  } finally {
    await client.close();
  }
  const everyone = await sdk('/admin/mcp');
  try {
    const names = (await everyone.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names, ['get_invoice', 'search_orders', 'refund', 'ev_echo', 'gro_work']);
    const source = (await everyone.listTools()).tools[0];
    assert.deepEqual(source.inputSchema.required, ['account_id', 'status'], 'the source keeps its own definition');
  } finally {
    await everyone.close();
  }
});

test('a call reaches the upstream with the pinned value and the default; the alias of an upstream MCP tool too', async () => {
  const client = await sdk('/support/mcp');
  try {
    const plain = mirrored(await client.callTool({ name: 'invoice', arguments: { limit: 2 } }));
    assert.equal(plain.path, '/mirror/invoices');
    assert.deepEqual(plain.body, { limit: 2, status: 'open', account_id: 'acme' });
    const paid = mirrored(await client.callTool({ name: 'invoice', arguments: { status: 'paid' } }));
    assert.deepEqual(paid.body, { status: 'paid', account_id: 'acme' });
    const orders = mirrored(await client.callTool({ name: 'orders', arguments: { q: 'late' } }));
    assert.deepEqual(orders.body, { q: 'late', account_id: 'acme' });
    const shout = await client.callTool({ name: 'shout', arguments: {} });
    assert.deepEqual(shout.content, [{ type: 'text', text: 'Echo: support-line' }]);
    // A tool support does not take is unknown there.
    const refund = await client.callTool({ name: 'refund', arguments: {} }).then((r) => r, (e) => e);
    assert.match(String(refund.message ?? JSON.stringify(refund)), /unknown tool "refund"/);
  } finally {
    await client.close();
  }
});

test('a hidden argument smuggled in arguments, in _meta, or to the upstream MCP tool is never the client\'s', async () => {
  const client = await sdk('/support/mcp');
  try {
    for (const smuggled of [{ account_id: 'evil' }, { account_id: null }, { account_id: 'evil', status: 'open' }]) {
      const refused = await client.callTool({ name: 'invoice', arguments: smuggled });
      assert.equal(refused.isError, true);
      assert.match(refused.content[0].text, /the argument "account_id" is not one a client may set/);
    }
    const echo = await client.callTool({ name: 'shout', arguments: { message: 'mine' } });
    assert.equal(echo.isError, true);
    const meta = mirrored(await client.callTool({ name: 'invoice', arguments: {}, _meta: { account_id: 'evil', arguments: { account_id: 'evil' } } }));
    assert.deepEqual(meta.body, { status: 'open', account_id: 'acme' });
  } finally {
    await client.close();
  }
  // Before 2025-11-25, arguments that do not fit are a protocol error: InvalidParams.
  const sid = await openSession(url('/support/mcp'), '2025-06-18');
  const old = await rpc('/support/mcp', sid, 'tools/call', { name: 'invoice', arguments: { account_id: 'evil' } });
  assert.equal(old.error.code, -32602);
  assert.match(old.error.message, /"account_id" is not one a client may set/);
});

test('the restricted enum is refused: InvalidParams before 2025-11-25, a tool error after', async () => {
  const sid = await openSession(url('/support/mcp'), '2025-06-18');
  const old = await rpc('/support/mcp', sid, 'tools/call', { name: 'invoice', arguments: { status: 'void' } });
  assert.equal(old.error.code, -32602);
  assert.match(old.error.message, /invalid arguments for tool "invoice"/);
  const client = await sdk('/support/mcp');
  try {
    const refused = await client.callTool({ name: 'invoice', arguments: { status: 'void' } });
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /invalid arguments for tool "invoice"/);
  } finally {
    await client.close();
  }
  // The source still takes it on the admin server.
  const admin = await sdk('/admin/mcp');
  try {
    const voided = mirrored(await admin.callTool({ name: 'get_invoice', arguments: { account_id: 'globex', status: 'void' } }));
    assert.deepEqual(voided.body, { account_id: 'globex', status: 'void' });
  } finally {
    await admin.close();
  }
});

test('through catalog mode\'s call_tool, the hidden argument stays the server\'s', async () => {
  const client = await sdk('/browse/mcp');
  try {
    const described = await client.callTool({ name: 'describe_tool', arguments: { name: 'invoice' } });
    assert.ok(!('account_id' in described.structuredContent.inputSchema.properties));
    const called = mirrored(await client.callTool({ name: 'call_tool', arguments: { name: 'invoice', arguments: { status: 'paid' } } }));
    assert.deepEqual(called.body, { status: 'paid', account_id: 'acme' });
    const smuggled = await client.callTool({ name: 'call_tool', arguments: { name: 'invoice', arguments: { status: 'paid', account_id: 'evil' } } });
    assert.equal(smuggled.isError, true);
  } finally {
    await client.close();
  }
});

test('2026-07-28: an Mcp-Param header cannot set a hidden argument', async () => {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'curated', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'invoice', 'mcp-param-account': 'evil' };
  const res = await post(url('/support/mcp'), { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'invoice', arguments: {}, _meta: meta } }, headers);
  assert.equal(res.status, 200);
  const reply = await res.json();
  assert.deepEqual(mirrored(reply.result).body, { status: 'open', account_id: 'acme' });
});

test('a reference to a tool an upstream lists later resolves when its list arrives, and the curated server\'s sessions are told', async () => {
  const client = await sdk('/support/mcp');
  const changed = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changed.push(n));
  await new Promise((r) => setTimeout(r, 500));
  const owner = await sdk('/admin/mcp');
  try {
    assert.deepEqual(client.getServerCapabilities().tools, { listChanged: true });
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'grown_later'));
    await owner.callTool({ name: 'gro_work', arguments: {} });
    for (let i = 0; i < 150 && changed.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(changed.length > 0, 'notifications/tools/list_changed on the support server');
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'grown_later'));
  } finally {
    await owner.close();
    await client.close();
  }
});

test('live: an edit of the source shows through the alias; the alias\'s own definition is versioned and rolled back', async () => {
  // The support server's sessions are told, after the other tests' sessions too (the registry
  // tells its listeners several at once).
  const client = await sdk('/support/mcp');
  const changed = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changed.push(n));
  await new Promise((r) => setTimeout(r, 500));
  try {
    const source = (await admin('/servers/admin/tools/get_invoice')).json;
    const moved = { ...source, inputSchema: { ...source.inputSchema, properties: { ...source.inputSchema.properties, currency: { type: 'string' } } }, http: { ...source.http, url: source.http.url.replace('/invoices', '/invoices-v2') } };
    const edited = await admin('/servers/admin/tools/get_invoice', { method: 'PUT', body: moved });
    assert.equal(edited.status, 200, JSON.stringify(edited.json));
    const listed = async () => (await client.listTools()).tools.find((t) => t.name === 'invoice');
    for (let i = 0; i < 50 && !('currency' in (await listed()).inputSchema.properties); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok('currency' in (await listed()).inputSchema.properties);
    for (let i = 0; i < 150 && changed.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(changed.length > 0, 'notifications/tools/list_changed on the support server');
    const call = mirrored(await client.callTool({ name: 'invoice', arguments: { currency: 'EUR' } }));
    assert.equal(call.path, '/mirror/invoices-v2');
    assert.deepEqual(call.body, { currency: 'EUR', status: 'open', account_id: 'acme' });

    // A change that breaks a reference is refused with the path of the reference.
    const removed = await admin('/servers/admin/tools/get_invoice', { method: 'DELETE' });
    assert.equal(removed.status, 400, JSON.stringify(removed.json));
    assert.equal(removed.json.error.configPath, 'servers[1].include[0].tool');

    // The support server's include is its configuration: a new version, and a rollback.
    const before = await admin('/servers');
    const support = (await admin('/servers/support')).json;
    const retitled = await admin('/servers/support', { method: 'PUT', body: { ...support, include: support.include.map((i) => (i.as === 'invoice' ? { ...i, title: 'Our invoices' } : i)) } });
    assert.equal(retitled.status, 200, JSON.stringify(retitled.json));
    assert.equal((await listed()).title, 'Our invoices');
    const previous = Number(before.headers.get('etag').slice(2, -1));
    const rolled = await admin(`/versions/${previous}/rollback`, { method: 'POST' });
    assert.equal(rolled.status, 200, JSON.stringify(rolled.json));
    assert.equal((await listed()).title, 'Invoice');
    assert.ok('currency' in (await listed()).inputSchema.properties, 'the rollback keeps the source\'s edit made before it');
  } finally {
    await client.close();
  }
});

test('as a task, the alias runs with the pinned value', async () => {
  const client = await sdk('/support/mcp');
  try {
    const created = await client.request({ method: 'tools/call', params: { name: 'invoice', arguments: { status: 'paid' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    const { taskId } = created.task;
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    assert.deepEqual(mirrored(result).body, { status: 'paid', account_id: 'acme' });
    const smuggled = await client.request({ method: 'tools/call', params: { name: 'invoice', arguments: { account_id: 'evil' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema).then((r) => r, (e) => e);
    assert.ok(smuggled instanceof Error || smuggled.isError, JSON.stringify(smuggled));
  } finally {
    await client.close();
  }
});
