// Access rules (issue 41, policies): CEL allow and deny rules hide what a caller may not use
// from every list and every path to it (a call by name, catalog mode's search, describe and
// call_tool, a task, a deferred call, resources and prompts), each refused exactly as an
// unknown entry is; rules on arguments read the validated, typed value, so type confusion,
// look-alike letters and numbers as strings do not pass; the rules change live through the
// admin API. The real TS SDK client is the client; the upstream is a real HTTP server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { INIT, post, startMiniflare } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';

const ADMIN_TOKEN = 'admin-token-policies-4c2e-9b7d1f3a';
const SUPPORT = 'support-token-8d1e';
const ROOT = 'root-token-2f7a';

const object = (properties, required = []) => ({ type: 'object', properties, required });
const tools = [
  { name: 'lookup', tags: ['read'], inputSchema: object({ q: { type: 'string' } }), http: { url: '{+env.UPSTREAM_URL}/echo' } },
  { name: 'delete_account', description: 'Deletes an account.', tags: ['write'], http: { url: '{+env.UPSTREAM_URL}/echo?deleted' } },
  { name: 'transfer', description: 'Moves money out of an account.', tags: ['write'], inputSchema: object({ account_id: { type: 'string' }, amount: { type: 'number' } }, ['account_id', 'amount']), http: { url: '{+env.UPSTREAM_URL}/echo?transfer', method: 'POST', body: { account: '{account_id}', amount: '{amount}' } } },
  { name: 'long_job', tags: ['write'], taskSupport: 'optional', http: { url: '{+env.UPSTREAM_URL}/echo?job' } },
  { name: 'later', tags: ['write'], execution: 'callback', http: { url: '{+env.UPSTREAM_URL}/jobs/later' } },
];
const policies = [
  { name: 'support reads', allow: "'support' in principal.roles && ('read' in entry.tags || entry.name in ['transfer', 'greet', 'note://public'])" },
  { name: 'admins', allow: "'admin' in principal.roles" },
  { name: 'own account', deny: "entry.name == 'transfer' && args.account_id != principal.subject" },
  { name: 'small amounts', deny: "entry.name == 'transfer' && !('admin' in principal.roles) && args.amount > 100" },
];
const server = (route, name, extra = {}) => ({
  route,
  name,
  version: '1',
  privateUpstreams: ['127.0.0.1'],
  auth: { tokens: [{ secret: 'SUPPORT_TOKEN', subject: 'sam', roles: ['support'] }, { secret: 'ROOT_TOKEN', subject: 'root', roles: ['admin'] }] },
  tools,
  resources: [{ uri: 'note://public', name: 'public', text: 'for everyone' }, { uri: 'note://secret', name: 'secret', text: 'for admins' }],
  prompts: [{ name: 'greet', messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] }, { name: 'admin_prompt', messages: [{ role: 'user', content: { type: 'text', text: 'root' } }] }],
  policies,
  ...extra,
});

let upstream;
let worker;
before(async () => {
  upstream = await startTestUpstream();
  const desk = {
    route: '/desk/mcp',
    name: 'desk',
    version: '1',
    auth: server('/', '').auth,
    include: [{ server: 'governed', tool: 'lookup', as: 'find' }, { server: 'governed', tool: 'delete_account', as: 'remove' }],
    policies: [{ name: 'no writes through the desk', deny: "entry.source == 'alias' && entry.server == 'governed' && 'write' in entry.tags" }],
  };
  const config = { admin: {}, servers: [server('/mcp', 'governed'), server('/catalog/mcp', 'governed-catalog', { toolDiscovery: 'catalog' }), desk] };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-policies-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, bindings: { SUPPORT_TOKEN: SUPPORT, ROOT_TOKEN: ROOT, MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
});
after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
});

async function connect(token, route = '/mcp') {
  const client = new Client({ name: 'e2e-policies', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(route, worker.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** A raw JSON-RPC exchange in a fresh session, for byte-exact errors. */
async function raw(token, message, route = '/mcp') {
  const url = new URL(route, worker.url);
  const headers = { authorization: `Bearer ${token}` };
  const init = await post(url, INIT, headers);
  assert.equal(init.status, 200);
  const sid = init.headers.get('mcp-session-id');
  await init.text();
  const res = await post(url, { jsonrpc: '2.0', id: 7, ...message }, { ...headers, 'mcp-session-id': sid });
  return res.json();
}

const upstreamCalls = (marker) => upstream.seen.filter((r) => r.url.includes(marker)).length;

test('each caller lists what the rules let them use, tools, resources and prompts alike', async () => {
  const support = await connect(SUPPORT);
  assert.deepEqual((await support.listTools()).tools.map((t) => t.name), ['lookup', 'transfer']);
  assert.deepEqual((await support.listResources()).resources.map((r) => r.uri), ['note://public']);
  assert.deepEqual((await support.listPrompts()).prompts.map((p) => p.name), ['greet']);
  await support.close();
  const root = await connect(ROOT);
  assert.deepEqual((await root.listTools()).tools.map((t) => t.name), tools.map((t) => t.name));
  assert.deepEqual((await root.listResources()).resources.map((r) => r.uri), ['note://public', 'note://secret']);
  assert.equal((await root.readResource({ uri: 'note://secret' })).contents[0].text, 'for admins');
  await root.close();
});

test('a hidden tool called by name, as a task or deferred, is refused byte for byte as an unknown one, and nothing reaches the upstream', async () => {
  const unknown = await raw(SUPPORT, { method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
  const expect = (name) => JSON.parse(JSON.stringify(unknown).replace('no_such_tool', name));
  const before = upstream.seen.length;
  for (const name of ['delete_account', 'later']) {
    assert.deepEqual(await raw(SUPPORT, { method: 'tools/call', params: { name, arguments: {} } }), expect(name));
  }
  assert.deepEqual(await raw(SUPPORT, { method: 'tools/call', params: { name: 'long_job', arguments: {}, task: { ttl: 60000 } } }), expect('long_job'));
  assert.deepEqual(await raw(SUPPORT, { method: 'tools/call', params: { name: 'no_such_tool', arguments: {}, task: { ttl: 60000 } } }), unknown);
  assert.equal(upstream.seen.length, before);
  const root = await raw(ROOT, { method: 'tools/call', params: { name: 'delete_account', arguments: {} } });
  assert.ok(root.result && !root.result.isError, JSON.stringify(root));
});

test('catalog mode: search and describe do not find a hidden tool, and call_tool refuses it as unknown', async () => {
  const call = (token, name, args) => raw(token, { method: 'tools/call', params: { name, arguments: args } }, '/catalog/mcp');
  const deletions = upstreamCalls('deleted');
  const found = await call(SUPPORT, 'search_tools', { query: 'account' });
  assert.deepEqual(found.result.structuredContent.tools.map((t) => t.name), ['transfer']);
  const rootFound = await call(ROOT, 'search_tools', { query: 'account' });
  assert.deepEqual(rootFound.result.structuredContent.tools.map((t) => t.name).sort(), ['delete_account', 'transfer']);
  const described = await call(SUPPORT, 'describe_tool', { name: 'delete_account' });
  const unknownDescribed = await call(SUPPORT, 'describe_tool', { name: 'no_such_tool' });
  assert.equal(described.result.isError, true);
  assert.equal(JSON.stringify(described).replace('delete_account', 'no_such_tool'), JSON.stringify(unknownDescribed));
  const viaCall = await call(SUPPORT, 'call_tool', { name: 'delete_account', arguments: {} });
  const unknownCall = await call(SUPPORT, 'call_tool', { name: 'no_such_tool', arguments: {} });
  assert.equal(JSON.stringify(viaCall).replace('delete_account', 'no_such_tool'), JSON.stringify(unknownCall));
  assert.equal(upstreamCalls('deleted'), deletions);
});

test("a curated alias is an entry of its own server: that server's rules hide it, and calling it by name is refused as unknown", async () => {
  const root = await connect(ROOT, '/desk/mcp');
  assert.deepEqual((await root.listTools()).tools.map((t) => t.name), ['find']);
  await root.close();
  const deletions = upstreamCalls('deleted');
  const alias = await raw(ROOT, { method: 'tools/call', params: { name: 'remove', arguments: {} } }, '/desk/mcp');
  const unknown = await raw(ROOT, { method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }, '/desk/mcp');
  assert.equal(JSON.stringify(alias).replace('remove', 'no_such_tool'), JSON.stringify(unknown));
  assert.equal(upstreamCalls('deleted'), deletions);
});

test('hidden resources and prompts are as unknown as absent ones', async () => {
  const read = await raw(SUPPORT, { method: 'resources/read', params: { uri: 'note://secret' } });
  const absent = await raw(SUPPORT, { method: 'resources/read', params: { uri: 'note://absent' } });
  assert.deepEqual(read, JSON.parse(JSON.stringify(absent).replaceAll('note://absent', 'note://secret')));
  assert.equal(read.error.code, -32002);
  const got = await raw(SUPPORT, { method: 'prompts/get', params: { name: 'admin_prompt' } });
  const none = await raw(SUPPORT, { method: 'prompts/get', params: { name: 'absent' } });
  assert.deepEqual(got, JSON.parse(JSON.stringify(none).replace('absent', 'admin_prompt')));
  const subscribed = await raw(SUPPORT, { method: 'resources/subscribe', params: { uri: 'note://secret' } });
  assert.equal(subscribed.error.code, -32002);
});

test('argument rules read typed values: other accounts, look-alike letters, numbers as strings and large amounts are refused', async () => {
  const support = await connect(SUPPORT);
  const transfer = (args) => support.callTool({ name: 'transfer', arguments: args });
  const before = upstreamCalls('transfer');
  const ok = await transfer({ account_id: 'sam', amount: 100 });
  assert.ok(!ok.isError, JSON.stringify(ok));
  assert.equal(upstreamCalls('transfer'), before + 1);
  const refusals = [
    [{ account_id: 'bob', amount: 5 }, 'refused by the policy "own account"'],
    [{ account_id: 'ｓam', amount: 5 }, 'refused by the policy "own account"'],
    [{ account_id: 'sam\u200b', amount: 5 }, 'refused by the policy "own account"'],
    [{ account_id: 'SAM', amount: 5 }, 'refused by the policy "own account"'],
    [{ account_id: 'sam', amount: 100.5 }, 'refused by the policy "small amounts"'],
    [{ account_id: 'sam', amount: 1e6 }, 'refused by the policy "small amounts"'],
  ];
  for (const [args, why] of refusals) {
    const result = await transfer(args);
    assert.equal(result.isError, true, JSON.stringify(args));
    assert.equal(result.content[0].text, `invalid arguments for tool "transfer": ${why}`);
  }
  // The schema sees type confusion first: a string amount or an array account never reaches the rules.
  for (const args of [{ account_id: 'sam', amount: '5' }, { account_id: ['sam'], amount: 5 }, { account_id: { toString: 'sam' }, amount: 5 }]) {
    const result = await transfer(args);
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /^invalid arguments for tool "transfer": /);
    assert.doesNotMatch(result.content[0].text, /policy/);
  }
  assert.equal(upstreamCalls('transfer'), before + 1);
  await support.close();
  const root = await connect(ROOT);
  const big = await root.callTool({ name: 'transfer', arguments: { account_id: 'root', amount: 5000 } });
  assert.ok(!big.isError, 'the amount rule exempts admins');
  await root.close();
});

test('rules change live through the admin API, and a rollback restores them', async () => {
  const adminApi = (path, method = 'GET', body) => fetch(new URL(`/admin/api${path}`, worker.url), { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const bad = await adminApi('/servers/governed', 'PUT', server('/mcp', 'governed', { policies: [{ name: 'broken', deny: "entry.name == 'x' &&" }] }));
  assert.equal(bad.status, 400);
  const fault = await bad.json();
  assert.equal(fault.error.path, 'policies[0].deny');
  assert.equal(fault.error.configPath, 'servers[0].policies[0].deny');
  assert.equal(fault.error.message, 'is not an expression this server evaluates: the expression ends too soon');
  const listening = await connect(SUPPORT);
  const changed = [];
  listening.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changed.push(n));
  await new Promise((r) => setTimeout(r, 500));
  const put = await adminApi('/servers/governed', 'PUT', server('/mcp', 'governed', { policies: [{ name: 'no writes', deny: "'write' in entry.tags" }] }));
  assert.equal(put.status, 200, await put.clone().text());
  for (let i = 0; i < 100 && changed.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(changed.length > 0, 'a session listening is told its tools changed');
  assert.deepEqual((await listening.listTools()).tools.map((t) => t.name), ['lookup']);
  await listening.close();
  const back = await adminApi('/versions/0/rollback', 'POST');
  assert.equal(back.status, 200, await back.clone().text());
  const again = await connect(SUPPORT);
  assert.deepEqual((await again.listTools()).tools.map((t) => t.name), ['lookup', 'transfer']);
  await again.close();
});

test('denials are in the audit log: who, which tool, and whether it was hidden or its arguments refused', async () => {
  const read = async () => (await (await fetch(new URL('/admin/api/audit?limit=200', worker.url), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()).entries;
  let entries = [];
  for (let i = 0; i < 50 && !entries.some((e) => e.action === 'policy_denied' && e.target === 'transfer'); i++) {
    entries = await read();
    await new Promise((r) => setTimeout(r, 100));
  }
  const denied = entries.filter((e) => e.action === 'policy_denied');
  const hidden = denied.find((e) => e.target === 'delete_account' && e.server === 'governed');
  assert.ok(hidden, JSON.stringify(entries));
  assert.equal(hidden.actor, 'token:sam');
  assert.equal(hidden.detail, 'the tool is hidden from the caller');
  const refused = denied.find((e) => e.target === 'transfer');
  assert.equal(refused.detail, 'its arguments were refused by a policy');
  assert.ok(!JSON.stringify(entries).includes(SUPPORT), 'no credential in the audit log');
});
