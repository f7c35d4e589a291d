// Caching (issue 43): tools' results kept at the edge (`cache.results`) in the Workers Cache API,
// and the 2026-07-28 cache hints (`ttlMs`, `cacheScope`) on lists and reads, from the
// configuration and narrowed by an upstream MCP server's own. A real HTTP upstream on 127.0.0.1
// counts its hits and sends ETags: a repeated call is answered without it, a stale entry is
// revalidated with If-None-Match (304 → served), per-principal entries never cross principals,
// public ones are shared, a live edit makes old entries unreachable, error results are never
// kept, other arguments miss. Both paths: sessions (the official SDK client, in the session's
// Durable Object) and 2026-07-28 requests (no session).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TOKENS, buildDir, post, startMiniflare } from './harness.mjs';
import { check } from '../../cli/check.mjs';

const ADMIN_TOKEN = 'admin-token-cache-e2e-2f8c-91d04b7e3a65c1f0';
const SERVER = 'cache-test';
const VERSION = '2026-07-28';

/** The upstream: tool endpoints that count their hits and send ETags, and a small MCP server
 * whose list and read results carry their own cache hints. */
function startUpstream() {
  const hits = {};
  const conditional = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/mcp') return mcp(JSON.parse(body || '{}'), res);
    hits[path] = (hits[path] ?? 0) + 1;
    const inm = req.headers['if-none-match'];
    if (inm) conditional.push({ path, inm });
    const [, kind, arg] = path.split('/');
    if (kind === 'weather') {
      const etag = `"w-${arg}"`;
      if (inm === etag) return res.writeHead(304, { etag }).end();
      return res.writeHead(200, { 'content-type': 'application/json', etag }).end(JSON.stringify({ city: decodeURIComponent(arg), served: hits[path] }));
    }
    if (kind === 'me') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ user: req.headers['x-user'], served: hits[path] }));
    if (kind === 'broken') return res.writeHead(503, { 'content-type': 'text/plain' }).end('down for now');
    return res.writeHead(404).end();
  });
  const answer = (res, id, result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }));
  function mcp(message, res) {
    if (!('id' in message)) return res.writeHead(202).end();
    switch (message.method) {
      case 'initialize':
        return answer(res, message.id, { protocolVersion: '2025-06-18', capabilities: { tools: {}, resources: {} }, serverInfo: { name: 'hinted', version: '1' } });
      case 'tools/list':
        return answer(res, message.id, { tools: [{ name: 'lookup', inputSchema: { type: 'object' } }], ttlMs: 1000, cacheScope: 'private' });
      case 'resources/list':
        return answer(res, message.id, { resources: [{ uri: 'hinted://narrow', name: 'narrow' }, { uri: 'hinted://wide', name: 'wide' }], ttlMs: 30000, cacheScope: 'private' });
      case 'resources/templates/list':
        return answer(res, message.id, { resourceTemplates: [], ttlMs: 30000, cacheScope: 'private' });
      case 'resources/read': {
        const uri = message.params.uri;
        // `narrow`: a shorter life and a per-principal scope; `wide`: longer and public than ours.
        const hint = uri === 'hinted://narrow' ? { ttlMs: 2000, cacheScope: 'private' } : { ttlMs: 999_999_999, cacheScope: 'public' };
        return answer(res, message.id, { contents: [{ uri, text: uri }], ...hint });
      }
      default:
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
    }
  }
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${server.address().port}`;
      resolve({ url, hits, conditional, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) });
    });
  });
}

const object = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const tools = [
  { name: 'weather', description: 'The weather.', inputSchema: object, http: { url: '{+env.UPSTREAM_URL}/weather/{city}' }, cache: { results: { scope: 'public', ttlMs: 1500 } } },
  { name: 'me', inputSchema: { type: 'object' }, http: { url: '{+env.UPSTREAM_URL}/me', headers: { 'X-User': '{principal.subject}' } }, cache: { results: { scope: 'principal', ttlMs: 60000 } } },
  { name: 'broken', inputSchema: { type: 'object' }, http: { url: '{+env.UPSTREAM_URL}/broken' }, cache: { results: { scope: 'public', ttlMs: 60000 } } },
];

let upstream;
let worker;
let mcpUrl;
before(async () => {
  upstream = await startUpstream();
  const config = {
    servers: [
      {
        name: SERVER,
        version: '1',
        route: '/mcp',
        privateUpstreams: ['127.0.0.1'],
        auth: { from: ['bearer'], tokens: [{ secret: 'BOT_TOKEN', subject: 'bot' }, { secret: 'ADMIN_KEY', subject: 'admin' }] },
        cache: { ttlMs: 60000, scope: 'public' },
        tools,
        resources: [{ uri: 'memo://short', name: 'short', text: 'kept briefly', cache: { ttlMs: 5000, scope: 'private' } }],
        upstreams: [{ name: 'hinted', url: `${upstream.url}/mcp`, prefix: 'h_' }],
      },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-cache-'));
  const path = join(dir, 'mcp-edge.json');
  writeFileSync(path, JSON.stringify(config));
  worker = await startMiniflare({ config: path, upstreamUrl: upstream.url, bindings: { MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  mcpUrl = new URL('/mcp', worker.url);
});
after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
});

const META = {
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientInfo': { name: 'cache-e2e', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A 2026-07-28 request (no session) as `token`'s principal; its result. */
async function send(method, params, token = TOKENS.BOT_TOKEN) {
  const name = method === 'resources/read' ? params.uri : params.name;
  const headers = { authorization: `Bearer ${token}`, 'mcp-protocol-version': VERSION, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
  const res = await post(mcpUrl, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } }, headers);
  const body = await res.json();
  assert.ok(body.result, JSON.stringify(body));
  return body.result;
}

const call = (name, args, token) => send('tools/call', { name, arguments: args }, token);

/** An SDK client with a session, as `token`'s principal. */
async function sessionClient(token) {
  const client = new Client({ name: 'cache-e2e', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

test('a repeated call is answered from the cache, on both paths, and says how long it stays fresh', async () => {
  const first = await call('weather', { city: 'Oslo' });
  assert.deepEqual(first.structuredContent, { city: 'Oslo', served: 1 });
  assert.equal(first.cacheScope, 'public');
  assert.equal(first.ttlMs, 1500);
  const second = await call('weather', { city: 'Oslo' });
  assert.deepEqual(second.structuredContent, { city: 'Oslo', served: 1 });
  assert.equal(upstream.hits['/weather/Oslo'], 1);
  assert.ok(second.ttlMs <= 1500 && second.cacheScope === 'public', JSON.stringify(second));
  // A session's call (in its Durable Object), by another principal: the public entry is shared.
  const client = await sessionClient(TOKENS.ADMIN_KEY);
  try {
    const viaSession = await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } });
    assert.deepEqual(viaSession.structuredContent, { city: 'Oslo', served: 1 });
    // And the other way round: kept by the session's call, served to a 2026-07-28 request.
    const kept = await client.callTool({ name: 'weather', arguments: { city: 'Lima' } });
    assert.deepEqual(kept.structuredContent, { city: 'Lima', served: 1 });
    assert.deepEqual((await call('weather', { city: 'Lima' })).structuredContent, { city: 'Lima', served: 1 });
    assert.equal(upstream.hits['/weather/Lima'], 1);
  } finally {
    await client.close();
  }
  assert.equal(upstream.hits['/weather/Oslo'], 1);
});

test('other arguments miss; a stale entry is revalidated with If-None-Match, and a 304 serves it again', async () => {
  await call('weather', { city: 'Rome' });
  await call('weather', { city: 'Paris' });
  assert.deepEqual([upstream.hits['/weather/Rome'], upstream.hits['/weather/Paris']], [1, 1]);
  await new Promise((r) => setTimeout(r, 1700));
  const revalidated = await call('weather', { city: 'Rome' });
  assert.deepEqual(revalidated.structuredContent, { city: 'Rome', served: 1 });
  assert.equal(revalidated.ttlMs, 1500);
  assert.deepEqual(upstream.conditional.filter((c) => c.path === '/weather/Rome'), [{ path: '/weather/Rome', inm: '"w-Rome"' }]);
  // Served again fresh: no further request at all.
  assert.deepEqual((await call('weather', { city: 'Rome' })).structuredContent, { city: 'Rome', served: 1 });
  assert.equal(upstream.conditional.filter((c) => c.path === '/weather/Rome').length, 1);
  assert.equal(upstream.hits['/weather/Rome'], 2);
});

test('per-principal entries never cross principals', async () => {
  const bot = await call('me', {}, TOKENS.BOT_TOKEN);
  assert.deepEqual(bot.structuredContent, { user: 'bot', served: 1 });
  assert.equal(bot.cacheScope, 'private');
  const admin = await call('me', {}, TOKENS.ADMIN_KEY);
  assert.deepEqual(admin.structuredContent, { user: 'admin', served: 2 });
  assert.deepEqual((await call('me', {}, TOKENS.BOT_TOKEN)).structuredContent, { user: 'bot', served: 1 });
  assert.deepEqual((await call('me', {}, TOKENS.ADMIN_KEY)).structuredContent, { user: 'admin', served: 2 });
  assert.equal(upstream.hits['/me'], 2);
});

test('error results are never kept', async () => {
  for (let i = 0; i < 3; i++) {
    const result = await call('broken', {});
    assert.equal(result.isError, true);
    assert.equal(result.ttlMs, undefined);
  }
  assert.equal(upstream.hits['/broken'], 3);
});

test('ttlMs and cacheScope on lists and reads: from the configuration, and narrowed by an upstream MCP server', async () => {
  // The configuration says 60000 and public; the upstream's tools/list says 1000 and private
  // (it narrows tools/list, whose tools include its own), its other lists 30000 and private
  // (they narrow the server's hint).
  const listed = await send('tools/list', {});
  assert.ok(listed.tools.some((t) => t.name === 'h_lookup'), JSON.stringify(listed.tools) + worker.logs.filter((l) => /upstream MCP/.test(l)).join('\n'));
  assert.deepEqual([listed.ttlMs, listed.cacheScope], [1000, 'private']);
  const resources = await send('resources/list', {});
  assert.deepEqual([resources.ttlMs, resources.cacheScope], [30000, 'private']);
  // A resource's own hint narrows its reads.
  const own = await send('resources/read', { uri: 'memo://short' });
  assert.deepEqual([own.ttlMs, own.cacheScope], [5000, 'private']);
  // The upstream's shorter life wins; its longer, public one never widens ours.
  const narrow = await send('resources/read', { uri: 'hinted://narrow' });
  assert.deepEqual([narrow.contents[0].text, narrow.ttlMs, narrow.cacheScope], ['hinted://narrow', 2000, 'private']);
  const wide = await send('resources/read', { uri: 'hinted://wide' });
  assert.deepEqual([wide.ttlMs, wide.cacheScope], [30000, 'private']);
});

test('a live edit of the tool makes its kept results unreachable', async () => {
  const before = upstream.hits['/weather/Quito'] ?? 0;
  await call('weather', { city: 'Quito' });
  await call('weather', { city: 'Quito' });
  assert.equal(upstream.hits['/weather/Quito'], before + 1);
  const admin = (path, init = {}) => fetch(new URL(`/admin/api${path}`, worker.url), { ...init, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', ...init.headers } });
  const etag = (await admin('/servers')).headers.get('etag');
  const edited = { ...tools[0], description: 'The weather, edited.', cache: { results: { scope: 'public', ttlMs: 60000 } } };
  const put = await admin(`/servers/${SERVER}/tools/weather`, { method: 'PUT', body: JSON.stringify(edited), headers: { 'if-match': etag } });
  assert.equal(put.status, 200, await put.text());
  // The edit reaches this isolate within the live layer's check interval.
  let result;
  for (let i = 0; i < 50; i++) {
    result = await call('weather', { city: 'Quito' });
    if (result.ttlMs > 1500) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.deepEqual(result.structuredContent, { city: 'Quito', served: 2 });
  assert.equal(upstream.hits['/weather/Quito'], before + 2);
  assert.equal((await call('weather', { city: 'Quito' })).structuredContent.served, 2);
});

test('answers from the cache are still calls in the metrics, and counted as hits', async () => {
  const total = (text, prefix) => text.split('\n').filter((l) => l.startsWith(prefix)).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  let text = '';
  // The isolates tell the health object a second or so after the calls.
  for (let i = 0; i < 40; i++) {
    text = await (await fetch(new URL('/metrics', worker.url), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    if (total(text, 'mcp_edge_tool_cache_revalidations_total') >= 1 && total(text, 'mcp_edge_tool_cache_hits_total') >= 6) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  // Hits: Oslo twice, Lima, Rome, me twice, Quito at least once; the revalidation of Rome.
  assert.ok(total(text, 'mcp_edge_tool_cache_hits_total') >= 6, text);
  assert.ok(total(text, 'mcp_edge_tool_cache_revalidations_total') >= 1, text);
  assert.ok(total(text, 'mcp_edge_tool_cache_misses_total') >= 8, text);
  // Every weather call made is a call with outcome ok, answered from the cache or not: 13 at least.
  assert.ok(total(text, 'mcp_edge_tool_calls_total{server="cache-test",tool="weather",outcome="ok"') >= 13, text);
  assert.equal(total(text, 'mcp_edge_tool_calls_total{server="cache-test",tool="broken",outcome="upstream_error"'), 3);
});

test('mcp-edge check refuses a public cache for a tool that reads who calls', async () => {
  const bad = { servers: [{ name: 's', version: '1', tools: [{ ...tools[1], cache: { results: { scope: 'public', ttlMs: 60000 } } }] }] };
  const { ok, report } = await check('bad.json', JSON.stringify(bad), buildDir);
  assert.equal(ok, false);
  assert.match(report, /servers\[0\]\.tools\[0\]\.cache\.results: this tool reads the caller's identity \(\{principal\.…\}\), so one caller's result must never answer another: use "scope": "principal"/);
});
