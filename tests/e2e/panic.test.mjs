// A panic in Rust/wasm resets the instance (issue 6). The test build has two paths that panic on
// purpose; after each, later requests succeed and no persisted session state is lost.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, openSession } from './harness.mjs';

let server;
let url;
before(async () => {
  server = await startServer();
  url = server.mcpUrl;
});
after(() => server.close());

async function echo(sid, message) {
  const res = await post(url, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'echo', arguments: { message } } }, { 'mcp-session-id': sid });
  assert.equal(res.status, 200);
  return (await res.json()).result.structuredContent;
}

test('after a panic in the Worker, requests succeed and sessions are intact', async () => {
  const sid = await openSession(url);
  await post(url, { jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'error' } }, { 'mcp-session-id': sid });
  const crashed = await post(url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': sid, 'x-mcp-edge-test-panic': 'worker' }).catch((e) => e);
  assert.ok(crashed instanceof Error || crashed.status >= 500, `the panic answered ${crashed.status}`);
  assert.deepEqual(await echo(sid, 'after the worker panic'), { message: 'after the worker panic' });
  assert.ok(server.logs.some((l) => l.includes('forced panic in the Worker')), 'the panic was not logged');
});

test('after a panic in the session object, the session resumes from storage and others are unaffected', async () => {
  const sid = await openSession(url);
  const other = await openSession(url);
  // The panic happens after an await, in a task of the object: the request that caused it gets no
  // answer (workerd ends it after minutes), so the client gives up on it, as a real one would.
  const crashed = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'mcp-edge/test-panic' }),
    signal: AbortSignal.timeout(3000),
  }).catch((e) => e);
  assert.ok(crashed instanceof Error || crashed.status >= 500, `the panic answered ${crashed.status}`);
  assert.deepEqual(await echo(sid, 'same session'), { message: 'same session' });
  assert.deepEqual(await echo(other, 'other session'), { message: 'other session' });
  const unknown = await post(url, { jsonrpc: '2.0', id: 4, method: 'nope' }, { 'mcp-session-id': sid });
  assert.equal((await unknown.json()).error.code, -32601);
});
