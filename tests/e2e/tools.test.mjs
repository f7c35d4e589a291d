// Tool calls as fetch calls against a real upstream: failures become isError results, arguments
// are validated per protocol version, and templates encode what they fill.
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

async function call(sid, name, args, id = 1) {
  const res = await post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }, { 'mcp-session-id': sid });
  assert.equal(res.status, 200);
  return res.json();
}

test('an upstream 500 is a tool error with the status and the body', async () => {
  const sid = await openSession(url);
  const { result } = await call(sid, 'fail', {});
  assert.deepEqual(result, { content: [{ type: 'text', text: 'The upstream answered HTTP 500 (text/plain): upstream exploded' }], isError: true });
});

test('an upstream that hangs past timeoutMs is a tool error, and the session goes on', async () => {
  const sid = await openSession(url);
  const { result } = await call(sid, 'slow', {});
  assert.deepEqual(result, { content: [{ type: 'text', text: 'The upstream did not answer within 300 ms.' }], isError: true });
  const { result: echoed } = await call(sid, 'echo', { message: 'still here' }, 2);
  assert.deepEqual(echoed.structuredContent, { message: 'still here' });
});

test('invalid JSON from the upstream is a tool error that quotes it', async () => {
  const sid = await openSession(url);
  const { result } = await call(sid, 'bad_json', {});
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /^The upstream answered HTTP 200 with invalid JSON \(.*\): \{"oops": $/);
});

test('an unreachable upstream is a tool error', async () => {
  const dead = await startServer();
  const sid = await openSession(dead.mcpUrl);
  await dead.upstream.close();
  const res = await post(dead.mcpUrl, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'x' } } }, { 'mcp-session-id': sid });
  const { result } = await res.json();
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /^The upstream request failed: /);
  await dead.mf.dispose();
});

test('bad arguments: a tool error for 2025-11-25, -32602 before it; unknown tools are -32602', async () => {
  const latest = await openSession(url, '2025-11-25');
  const { result } = await call(latest, 'echo', { message: 42 });
  assert.deepEqual(result, { content: [{ type: 'text', text: 'invalid arguments for tool "echo": /message: expected string, got integer (type)' }], isError: true });
  const missing = await call(latest, 'echo', {});
  assert.equal(missing.result.content[0].text, 'invalid arguments for tool "echo": missing required property "message" (required)');
  const badEnum = await call(latest, 'lookup', { city: 'Oslo', unit: 'k' });
  assert.equal(badEnum.result.content[0].text, 'invalid arguments for tool "lookup": /unit: must be one of "c", "f" (enum)');

  for (const version of ['2025-06-18', '2025-03-26', '2024-11-05']) {
    const sid = await openSession(url, version);
    const reply = await call(sid, 'echo', {});
    assert.deepEqual(reply.error, { code: -32602, message: 'Invalid params: invalid arguments for tool "echo": missing required property "message" (required)' }, version);
  }
  for (const version of ['2025-11-25', '2024-11-05']) {
    const sid = await openSession(url, version);
    const reply = await call(sid, 'no_such_tool', {});
    assert.deepEqual(reply.error, { code: -32602, message: 'Invalid params: unknown tool "no_such_tool"' }, version);
  }
});

test('structuredContent only for sessions from 2025-06-18 on', async () => {
  const old = await openSession(url, '2025-03-26');
  const { result } = await call(old, 'echo', { message: 'm' });
  assert.deepEqual(result, { content: [{ type: 'text', text: '{"message":"m"}' }] });
});

test('arguments are URL-encoded where they land and cannot leave their segment', async () => {
  const sid = await openSession(url);
  const { result } = await call(sid, 'lookup', { city: 'São Paulo/../admin?x=1', unit: 'c' });
  assert.deepEqual(result.structuredContent, { path: '/inspect/S%C3%A3o%20Paulo%2F..%2Fadmin%3Fx%3D1', query: '?unit=c' });
  const seen = server.upstream.seen.find((r) => r.url.startsWith('/inspect/'));
  assert.equal(seen.url, '/inspect/S%C3%A3o%20Paulo%2F..%2Fadmin%3Fx%3D1?unit=c');
});

test('tools/list pages: everything on the first page, and a bad cursor is -32602', async () => {
  const sid = await openSession(url);
  const res = await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': sid });
  const { result } = await res.json();
  assert.equal(result.tools.length, 10);
  assert.equal(result.nextCursor, undefined);
  const bad = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: 'garbage' } }, { 'mcp-session-id': sid });
  assert.equal((await bad.json()).error.code, -32602);
});
