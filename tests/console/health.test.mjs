// The health figures (`console.health`), end to end: the test worker in workerd through
// Miniflare, a real upstream on 127.0.0.1. Calls that succeed, fail upstream (500), time out,
// cannot connect and are refused for their arguments, made in a session's object, from a lease
// in the Worker, in stateless mode and through catalog mode's call_tool; then GET
// /admin/api/health (polled until the isolates' flushes land) shows them per tool, by kind, with
// sensible p50 and p95. Without the admin bearer it is a 401; without MCP_EDGE_ADMIN_TOKEN a 404;
// with `"health": {"enabled": false}` nothing is counted. The Analytics Engine binding is
// Miniflare's own local one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshPersistDir, openSession, post, startMiniflare } from '../e2e/harness.mjs';
import { startTestUpstream } from '../e2e/upstream.mjs';

const ADMIN_TOKEN = 'admin-token-health-5b7e-93c1a0f4d2e8b76a';
const PRIVATE = ['127.0.0.1', 'localhost'];
const echo = {
  name: 'echo',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  http: { url: '{+env.UPSTREAM_URL}/echo' },
};
const fail = { name: 'fail', http: { url: '{+env.UPSTREAM_URL}/fail' } };
const slow = { name: 'slow', http: { url: '{+env.UPSTREAM_URL}/slow', timeoutMs: 300 } };
// Port 9 (discard) is closed on the test hosts: the connection is refused.
const unreachable = { name: 'unreachable', http: { url: 'http://127.0.0.1:9/nothing' } };

function config(health) {
  const path = join(mkdtempSync(join(tmpdir(), 'mcp-edge-health-')), 'mcp-edge.json');
  writeFileSync(path, JSON.stringify({
    console: { health },
    servers: [
      // Calls made in the session's object: no leases.
      { route: '/mcp', name: 'objects', version: '1', privateUpstreams: PRIVATE, sessions: { leaseMs: 0 }, tools: [echo, fail, slow, unreachable] },
      // Calls made in the Worker, from a lease on the session.
      { route: '/leased/mcp', name: 'leased', version: '1', privateUpstreams: PRIVATE, tools: [echo, fail] },
      { route: '/stateless/mcp', name: 'stateless', version: '1', privateUpstreams: PRIVATE, stateless: {}, tools: [echo, fail] },
      { route: '/catalog/mcp', name: 'catalog', version: '1', privateUpstreams: PRIVATE, toolDiscovery: 'catalog', tools: [echo] },
    ],
  }));
  return path;
}

let upstream;
before(async () => {
  upstream = await startTestUpstream();
});
after(() => upstream?.close());

async function start(health, { bindings = { MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, analyticsEngineDatasets, persist = false, path = config(health) } = {}) {
  return startMiniflare({ config: path, upstreamUrl: upstream.url, bindings, analyticsEngineDatasets, persist });
}

let nextId = 1;
/** Calls a tool and returns the JSON-RPC reply. */
async function call(url, name, args, headers = {}) {
  const res = await post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, headers);
  assert.equal(res.status, 200, `${name}: HTTP ${res.status}`);
  return res.json();
}

function session(url, id, version = '2025-11-25') {
  return (name, args) => call(url, name, args, { 'mcp-session-id': id, 'mcp-protocol-version': version });
}

function figures(url, authorization = `Bearer ${ADMIN_TOKEN}`) {
  return fetch(new URL('/admin/api/health', url), { headers: authorization ? { authorization } : {} });
}

/** Reads the figures until `done(view)` holds: flushes land within 5 s of their calls. */
async function until(url, done, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  let view;
  while (Date.now() < deadline) {
    const res = await figures(url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    view = await res.json();
    if (done(view)) return view;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`the figures did not arrive: ${JSON.stringify(view)}`);
}

const tool = (view, server, name) => view.servers.find((s) => s.name === server)?.tools.find((t) => t.name === name);

test('calls are counted per tool, by kind, with their latency; only for the admin', async () => {
  const { mf, url, logs } = await start({ analyticsEngine: 'MCP_HEALTH' }, { bindings: { MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, analyticsEngineDatasets: { MCP_HEALTH: { dataset: 'mcp_edge_health' } } });
  try {
    const objects = session(new URL('/mcp', url), await openSession(new URL('/mcp', url)));
    for (let i = 0; i < 3; i++) assert.equal((await objects('echo', { message: `hi ${i}` })).result.isError, undefined);
    for (let i = 0; i < 2; i++) assert.equal((await objects('fail', {})).result.isError, true);
    assert.equal((await objects('slow', {})).result.isError, true);
    assert.equal((await objects('unreachable', {})).result.isError, true);
    // 2025-11-25: arguments that do not fit are a tool error, so the model can correct itself.
    assert.equal((await objects('echo', { message: 7 })).result.isError, true);
    // Unknown tools are never counted: anyone could make names up.
    assert.equal((await objects('no_such_tool', {})).error.code, -32602);

    const leased = session(new URL('/leased/mcp', url), await openSession(new URL('/leased/mcp', url)));
    for (let i = 0; i < 2; i++) assert.ok((await leased('echo', { message: 'lease' })).result);
    assert.equal((await leased('fail', {})).result.isError, true);

    const stateless = (name, args) => call(new URL('/stateless/mcp', url), name, args, { 'mcp-protocol-version': '2025-06-18' });
    assert.ok((await stateless('echo', { message: 'x' })).result);
    assert.equal((await stateless('fail', {})).result.isError, true);
    // 2025-06-18: arguments that do not fit are invalid params.
    assert.equal((await stateless('echo', {})).error.code, -32602);

    const catalog = session(new URL('/catalog/mcp', url), await openSession(new URL('/catalog/mcp', url)));
    assert.ok((await catalog('search_tools', { query: 'echo' })).result);
    assert.ok((await catalog('call_tool', { name: 'echo', arguments: { message: 'via the catalog' } })).result);

    const view = await until(url, (v) => tool(v, 'objects', 'echo')?.calls === 4 && tool(v, 'objects', 'unreachable')?.calls === 1 && tool(v, 'objects', 'slow')?.calls === 1 && tool(v, 'leased', 'fail')?.calls === 1 && tool(v, 'stateless', 'echo')?.calls === 2 && tool(v, 'catalog', 'echo')?.calls === 1);
    assert.ok(view.since <= Date.now() - 59 * 60_000 && view.since > Date.now() - 61 * 60_000, `since ${view.since}`);
    assert.deepEqual(view.servers.map((s) => s.name), ['catalog', 'leased', 'objects', 'stateless']);
    assert.deepEqual(tool(view, 'objects', 'echo').errors, { validation: 1 });
    assert.deepEqual(tool(view, 'objects', 'fail').errors, { 'upstream 500': 2 });
    assert.equal(tool(view, 'objects', 'fail').calls, 2);
    assert.deepEqual(tool(view, 'objects', 'slow').errors, { timeout: 1 });
    assert.deepEqual(tool(view, 'objects', 'unreachable').errors, { network: 1 });
    assert.deepEqual(tool(view, 'leased', 'echo'), { ...tool(view, 'leased', 'echo'), calls: 2, errors: {} });
    assert.deepEqual(tool(view, 'leased', 'fail').errors, { 'upstream 500': 1 });
    assert.deepEqual(tool(view, 'stateless', 'echo').errors, { validation: 1 });
    assert.deepEqual(tool(view, 'stateless', 'fail').errors, { 'upstream 500': 1 });
    // Catalog mode: call_tool counts as the tool it calls; search_tools is not an upstream call.
    assert.deepEqual(tool(view, 'catalog', 'echo').errors, {});
    assert.deepEqual(view.servers.find((s) => s.name === 'catalog').tools.map((t) => t.name), ['echo']);
    assert.equal(view.servers.find((s) => s.name === 'objects').tools.some((t) => t.name === 'no_such_tool'), false);
    // Latency: the timed-out call took its 300 ms timeout (the histogram is within 5 %); local
    // calls take a few milliseconds; p95 is never below p50.
    const timedOut = tool(view, 'objects', 'slow');
    assert.ok(timedOut.p50Ms >= 280 && timedOut.p50Ms < 1000, `slow p50 ${timedOut.p50Ms}`);
    for (const server of view.servers) {
      for (const t of server.tools) {
        assert.ok(Number.isInteger(t.p50Ms) && t.p95Ms >= t.p50Ms, `${server.name}/${t.name}: ${JSON.stringify(t)}`);
        if (t.name !== 'slow') assert.ok(t.p95Ms < 1000, `${server.name}/${t.name}: ${JSON.stringify(t)}`);
      }
    }
    // The local Analytics Engine binding took every data point without a fault.
    assert.equal(logs.filter((l) => l.includes('cannot be written')).length, 0);

    // Only with the admin token.
    for (const authorization of [null, 'Bearer wrong-token', `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`]) {
      const res = await figures(url, authorization);
      assert.equal(res.status, 401, String(authorization));
      assert.match(res.headers.get('content-type'), /application\/json/);
      assert.match(res.headers.get('www-authenticate'), /^Bearer /);
      const body = await res.text();
      assert.ok(!body.includes(ADMIN_TOKEN) && !body.includes('"servers"'), body);
    }
    const post = await fetch(new URL('/admin/api/health', url), { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(post.status, 405);
  } finally {
    await mf.dispose();
  }
});

test('without the admin token the path does not exist; a missing Analytics Engine binding fails no call', async () => {
  const { mf, url, logs } = await start({ analyticsEngine: 'NOT_BOUND' }, { bindings: {} });
  try {
    const res = await figures(url);
    assert.equal(res.status, 404);
    await res.text();
    const stateless = (name, args) => call(new URL('/stateless/mcp', url), name, args);
    assert.ok((await stateless('echo', { message: 'still served' })).result);
    assert.ok((await stateless('echo', { message: 'and again' })).result);
    // Said once per isolate, in the log.
    const deadline = Date.now() + 10_000;
    while (!logs.some((l) => l.includes('NOT_BOUND')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(logs.filter((l) => l.includes('names the binding NOT_BOUND')).length, 1, logs.join('\n'));
  } finally {
    await mf.dispose();
  }
});

test('with health off, nothing is counted', async () => {
  const { mf, url } = await start({ enabled: false });
  try {
    const objects = session(new URL('/mcp', url), await openSession(new URL('/mcp', url)));
    assert.ok((await objects('echo', { message: 'uncounted' })).result);
    assert.equal((await objects('fail', {})).result.isError, true);
    assert.equal((await objects('echo', {})).result.isError, true);
    assert.ok((await call(new URL('/stateless/mcp', url), 'echo', { message: 'uncounted' })).result);
    // An absence can only be seen once a flush would have landed: 5 s after the calls, and a margin.
    await new Promise((r) => setTimeout(r, 6_500));
    const res = await figures(url);
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).servers, []);
  } finally {
    await mf.dispose();
  }
});

test('the figures are kept in the health object, not in an isolate', async () => {
  const persist = freshPersistDir();
  const path = config({});
  let { mf, url } = await start({}, { persist, path });
  try {
    const objects = session(new URL('/mcp', url), await openSession(new URL('/mcp', url)));
    assert.ok((await objects('echo', { message: 'kept' })).result);
    assert.ok((await call(new URL('/stateless/mcp', url), 'fail', {})).result);
    await until(url, (v) => tool(v, 'objects', 'echo')?.calls === 1 && tool(v, 'stateless', 'fail')?.calls === 1);
    // Past the flush (5 s after the calls): then a new workerd, whose isolates start empty,
    // reads them from the object's storage.
    await new Promise((r) => setTimeout(r, 6_500));
    await mf.dispose();
    ({ mf, url } = await start({}, { persist, path }));
    const res = await figures(url);
    const view = await res.json();
    assert.equal(tool(view, 'objects', 'echo')?.calls, 1, JSON.stringify(view));
    assert.deepEqual(tool(view, 'stateless', 'fail')?.errors, { 'upstream 500': 1 });
  } finally {
    await mf.dispose();
  }
});
