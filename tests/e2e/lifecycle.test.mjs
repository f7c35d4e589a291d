// Session expiry by Durable Object alarm, and a worker started with an invalid configuration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, startMiniflare, invalidConfig, post, openSession } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('idle sessions expire by alarm; a session with a call in flight does not', async () => {
  const server = await startServer();
  try {
    // This server's sessions expire after 1.5 s idle.
    const url = new URL('/short/mcp', server.url);
    const idle = await openSession(url);
    const busy = await openSession(url);
    assert.equal((await post(url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': idle })).status, 200);

    // Keep `busy` in a call for longer than the idle timeout.
    const call = post(url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hold', arguments: { key: 'busy' } } }, { 'mcp-session-id': busy, accept: 'application/x-ndjson' });
    await server.upstream.waitForHold('busy');
    await sleep(3500);
    server.upstream.release('busy', 'finished');
    const reply = await (await call).text();
    assert.match(reply, /"text":"finished"/);

    const gone = await post(url, { jsonrpc: '2.0', id: 3, method: 'ping' }, { 'mcp-session-id': idle });
    assert.equal(gone.status, 404);
    assert.equal((await gone.json()).error.code, -32001);
    const alive = await post(url, { jsonrpc: '2.0', id: 4, method: 'ping' }, { 'mcp-session-id': busy });
    assert.equal(alive.status, 200);

    // A session of one server is unknown to another.
    const other = await post(server.mcpUrl, { jsonrpc: '2.0', id: 5, method: 'ping' }, { 'mcp-session-id': busy });
    assert.equal(other.status, 404);
  } finally {
    await server.close();
  }
});

test('an alarm that fires twice does nothing the second time', async () => {
  const server = await startServer();
  const fire = (url, sid) => fetch(url, { method: 'POST', headers: { 'x-mcp-edge-test-hook': 'alarm', 'mcp-session-id': sid } });
  const ping = (url, sid) => post(url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': sid });
  try {
    // A live session: re-armed twice, it lives on with its state.
    const live = await openSession(server.mcpUrl);
    await post(server.mcpUrl, { jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'error' } }, { 'mcp-session-id': live });
    for (let i = 0; i < 2; i++) assert.equal((await fire(server.mcpUrl, live)).status, 204);
    assert.equal((await ping(server.mcpUrl, live)).status, 200);
    // An expired session: the first alarm ends it, the second finds nothing to do.
    const url = new URL('/short/mcp', server.url);
    const idle = await openSession(url);
    await sleep(1700);
    for (let i = 0; i < 2; i++) assert.equal((await fire(url, idle)).status, 204);
    assert.equal((await ping(url, idle)).status, 404);
  } finally {
    await server.close();
  }
});

test('a worker started with an invalid configuration answers every request with the fault', async () => {
  const { mf, url } = await startMiniflare({ config: invalidConfig });
  try {
    const want = {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32603, message: 'Invalid configuration: servers[0].tools[1].http.url: unknown argument "cty" in template' },
    };
    for (const [path, init] of [
      ['/mcp', { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}', headers: { 'content-type': 'application/json' } }],
      ['/mcp', { method: 'GET' }],
      ['/anything', { method: 'OPTIONS' }],
    ]) {
      const res = await fetch(new URL(path, url), init);
      assert.equal(res.status, 500, `${init.method} ${path}`);
      assert.deepEqual(await res.json(), want);
    }
  } finally {
    await mf.dispose();
  }
});
