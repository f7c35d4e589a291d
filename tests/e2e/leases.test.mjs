// Session leases: the Worker serves a session's plain calls itself, answering exactly as the
// session's object would, and hands back to the object whatever a lease cannot serve.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, openSession } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const echo = (id, message) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } });
const hold = (id, key) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { key } } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The request log lines of a session's tool calls: whether each was served from a lease. */
async function servedFromLease(sid) {
  await sleep(100);
  return server.logs
    .filter((l) => l.startsWith('{"requestId"'))
    .map((l) => JSON.parse(l))
    .filter((e) => e.sessionId === sid && e.method === 'tools/call')
    .map((e) => e.lease === true);
}

test('a lease answers with the bytes and headers the session object sends', async () => {
  const leased = new URL('/mcp', server.url);
  const direct = new URL('/direct/mcp', server.url);
  const a = await openSession(leased);
  const b = await openSession(direct);
  for (const accept of ['application/json', 'application/json, text/event-stream']) {
    const viaLease = await post(leased, echo(5, `hello ${accept}`), { 'mcp-session-id': a, accept });
    const viaObject = await post(direct, echo(5, `hello ${accept}`), { 'mcp-session-id': b, accept });
    assert.equal(viaLease.status, 200);
    assert.equal(viaObject.status, 200);
    for (const name of ['content-type', 'cache-control']) assert.equal(viaLease.headers.get(name), viaObject.headers.get(name), name);
    assert.equal(viaLease.headers.get('mcp-session-id'), a);
    assert.equal(viaObject.headers.get('mcp-session-id'), b);
    assert.equal(await viaLease.text(), await viaObject.text());
    // An invalid call is answered by the lease too, with the object's error.
    const bad = { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'echo', arguments: {} } };
    const badLease = await post(leased, bad, { 'mcp-session-id': a, accept });
    const badObject = await post(direct, bad, { 'mcp-session-id': b, accept });
    assert.equal(await badLease.text(), await badObject.text());
  }
  assert.deepEqual(await servedFromLease(a), [true, true, true, true]);
  assert.deepEqual(await servedFromLease(b), [false, false, false, false]);
});

test("interleaved sessions' answers, in each framing, carry their own session's id and their framing's headers", async () => {
  const url = new URL('/mcp', server.url);
  const sessions = [await openSession(url), await openSession(url), await openSession(url)];
  const framings = [
    ['application/json', 'application/json', null],
    ['text/event-stream', 'text/event-stream', 'no-cache'],
    ['application/x-ndjson', 'application/x-ndjson', 'no-cache'],
  ];
  for (let round = 0; round < 3; round++) {
    for (const [i, sid] of sessions.entries()) {
      const [accept, type, cache] = framings[(i + round) % framings.length];
      const res = await post(url, echo(round, `r${round} s${i}`), { 'mcp-session-id': sid, accept });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('mcp-session-id'), sid);
      assert.equal(res.headers.get('content-type'), type);
      assert.equal(res.headers.get('cache-control'), cache);
      assert.match(await res.text(), new RegExp(`r${round} s${i}`));
    }
  }
});

test('DELETE through this Worker ends the lease with the session', async () => {
  const url = new URL('/mcp', server.url);
  const sid = await openSession(url);
  assert.equal((await post(url, echo(1, 'before'), { 'mcp-session-id': sid })).status, 200);
  const ended = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(ended.status, 200);
  const after = await post(url, echo(2, 'after'), { 'mcp-session-id': sid });
  assert.equal(after.status, 404);
  assert.equal((await after.json()).error.code, -32001);
  // The call after DELETE asked the object for a lease and learnt that the session is gone.
  assert.deepEqual(await servedFromLease(sid), [true, false]);
});

test('a session that asks for log messages, or a call with a progress token, goes to the object', async () => {
  const url = new URL('/mcp', server.url);
  const sid = await openSession(url);
  await (await post(url, echo(1, 'leased'), { 'mcp-session-id': sid })).text();
  const progress = { ...echo(2, 'with progress'), params: { ...echo(2, '').params, arguments: { message: 'p' }, _meta: { progressToken: 'p1' } } };
  await (await post(url, progress, { 'mcp-session-id': sid })).text();
  // The level changes the session: the lease is dropped before the object hears of it.
  assert.equal((await post(url, { jsonrpc: '2.0', id: 3, method: 'logging/setLevel', params: { level: 'debug' } }, { 'mcp-session-id': sid })).status, 200);
  const logged = await post(url, echo(4, 'logged'), { 'mcp-session-id': sid });
  assert.equal((await logged.json()).result.structuredContent.message, 'logged');
  assert.deepEqual(await servedFromLease(sid), [true, false, false]);
});

test('a client that can be asked for input is served by the object', async () => {
  const url = new URL('/mcp', server.url);
  const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'e2e', version: '1' } } };
  const res = await post(url, init);
  const sid = res.headers.get('mcp-session-id');
  await res.text();
  await (await post(url, echo(1, 'asks'), { 'mcp-session-id': sid })).text();
  assert.deepEqual(await servedFromLease(sid), [false]);
});

test('a call that could outlive the session goes to the object, which keeps the session alive', async () => {
  // /short's sessions expire after 1.5 s idle, within its tools' 20 s and 30 s timeouts.
  const url = new URL('/short/mcp', server.url);
  const sid = await openSession(url);
  const call = post(url, hold(1, 'outlives'), { 'mcp-session-id': sid });
  await server.upstream.waitForHold('outlives');
  await sleep(2000);
  server.upstream.release('outlives', 'still here');
  assert.match(await (await call).text(), /still here/);
  assert.equal((await post(url, echo(2, 'alive'), { 'mcp-session-id': sid })).status, 200);
  assert.deepEqual(await servedFromLease(sid), [false, false]);
});

test('a call served from a lease is cancelled by notifications/cancelled, which arrives in another request', async () => {
  const url = new URL('/mcp', server.url);
  const sid = await openSession(url);
  const pending = post(url, hold(7, 'leased-cancel'), { 'mcp-session-id': sid });
  await server.upstream.waitForHold('leased-cancel');
  const cancel = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }, { 'mcp-session-id': sid });
  assert.equal(cancel.status, 202);
  const res = await pending;
  assert.equal(res.status, 202);
  assert.equal(res.headers.get('mcp-session-id'), sid);
  assert.equal(await res.text(), '');
  // The session goes on, from its lease.
  assert.equal((await (await post(url, echo(8, 'after'), { 'mcp-session-id': sid })).json()).result.structuredContent.message, 'after');
  assert.deepEqual(await servedFromLease(sid), [true, true]);
});

test('a lease past half its life is renewed behind the reply: calls that keep coming never wait for the object', async () => {
  const url = new URL('/mcp', server.url);
  const sid = await openSession(url);
  // This server's leaseMs is 2 s: each call comes 1.2 s after the last, past the half of the lease it found.
  for (let i = 0; i < 5; i++) {
    if (i > 0) await sleep(1200);
    const res = await post(url, echo(10 + i, `call ${i}`), { 'mcp-session-id': sid });
    assert.equal((await res.json()).result.structuredContent.message, `call ${i}`);
  }
  // A call after a pause longer than the lease asks the object again, and waits for it.
  await sleep(2600);
  assert.equal((await post(url, echo(20, 'after a pause'), { 'mcp-session-id': sid })).status, 200);
  await sleep(100);
  const lines = server.logs
    .filter((l) => l.startsWith('{"requestId"'))
    .map((l) => JSON.parse(l))
    .filter((e) => e.sessionId === sid && e.method === 'tools/call');
  assert.deepEqual(lines.map((e) => [e.lease === true, e.leaseAsked === true]), [[true, false], [true, false], [true, false], [true, false], [true, false], [true, true]]);
});
