// A panic in Rust/wasm ends the instance (issue 6), and with it every request the instance was
// serving. The test build has paths that panic or trap on purpose. Each interrupted request is
// answered within a second (a 500 with a JSON-RPC -32603, or an error message that ends its
// stream: src/edge/rescue.js), later requests succeed, and no persisted session state is lost.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, openSession, lines } from './harness.mjs';

let server;
let url;
before(async () => {
  server = await startServer();
  url = server.mcpUrl;
});
after(() => server.close());

/** What a trap answers a request with, whichever request it interrupted. */
const FAILED = { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error: the server failed while serving this request. Sessions are kept: send the request again.' } };

async function echo(sid, message) {
  const res = await post(url, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'echo', arguments: { message } } }, { 'mcp-session-id': sid });
  assert.equal(res.status, 200);
  return (await res.json()).result.structuredContent;
}

/** POSTs with a one-second limit: a request a trap interrupted must not wait longer. */
function postWithinASecond(target, body, headers = {}) {
  return fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(1000),
  });
}

async function assertRescued(res) {
  assert.equal(res.status, 500);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.deepEqual(await res.json(), FAILED);
}

test('a panic in the Worker: the request gets a 500 with -32603 at once; later requests succeed, sessions intact', async () => {
  const sid = await openSession(url);
  await post(url, { jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'error' } }, { 'mcp-session-id': sid });
  await assertRescued(await postWithinASecond(url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': sid, 'x-mcp-edge-test-panic': 'worker' }));
  assert.deepEqual(await echo(sid, 'after the worker panic'), { message: 'after the worker panic' });
  assert.ok(server.logs.some((l) => l.includes('forced panic in the Worker')), 'the panic was not logged');
});

test('a panic in the session object after an await: answered within a second; the session resumes from storage, others unaffected', async () => {
  const sid = await openSession(url);
  const other = await openSession(url);
  await assertRescued(await postWithinASecond(url, { jsonrpc: '2.0', id: 3, method: 'mcp-edge/test-panic' }, { 'mcp-session-id': sid }));
  assert.deepEqual(await echo(sid, 'same session'), { message: 'same session' });
  assert.deepEqual(await echo(other, 'other session'), { message: 'other session' });
  const unknown = await post(url, { jsonrpc: '2.0', id: 4, method: 'nope' }, { 'mcp-session-id': sid });
  assert.equal((await unknown.json()).error.code, -32601);
});

test('a trap that is no panic (no hook runs): answered within a second, and the next request works', async () => {
  const sid = await openSession(url);
  await assertRescued(await postWithinASecond(url, { jsonrpc: '2.0', id: 6, method: 'mcp-edge/test-trap' }, { 'mcp-session-id': sid }));
  assert.deepEqual(await echo(sid, 'after the trap'), { message: 'after the trap' });
});

test('a stream open when the instance traps ends with the error in its framing, within a second', async () => {
  const tools = new URL('/tools/mcp', server.url);
  const streaming = await openSession(tools);
  const key = `rescued-${Date.now()}`;
  const res = await fetch(tools, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/x-ndjson', 'mcp-session-id': streaming },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'hang', arguments: { key } } }),
  });
  assert.equal(res.status, 200);
  // The call is under way (its upstream holds the request) before another session panics.
  for (let i = 0; i < 100 && !server.upstream.hanging.has(key); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(server.upstream.hanging.has(key), 'the call never reached its upstream');
  const crashing = await openSession(url);
  const started = Date.now();
  await assertRescued(await postWithinASecond(url, { jsonrpc: '2.0', id: 8, method: 'mcp-edge/test-panic' }, { 'mcp-session-id': crashing }));
  const received = [];
  for await (const line of lines(res)) if (line) received.push(JSON.parse(line));
  assert.ok(Date.now() - started < 1000, `the stream ended ${Date.now() - started} ms after the panic`);
  assert.deepEqual(received, [FAILED]);
  // Both sessions go on.
  const ping = await post(tools, { jsonrpc: '2.0', id: 9, method: 'ping' }, { 'mcp-session-id': streaming });
  assert.deepEqual(await ping.json(), { jsonrpc: '2.0', id: 9, result: {} });
  assert.deepEqual(await echo(crashing, 'crashing session'), { message: 'crashing session' });
});
