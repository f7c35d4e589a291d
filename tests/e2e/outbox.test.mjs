// Every deferred result reaches its client once (issue 25): a callback call's result whose POST
// stream the client dropped, and cannot resume (NDJSON, SSE before 2025-11-25), is kept in the
// session's outbox and goes out before the reply to the client's next streamed POST, or on its
// next GET stream; never on two streams; dropped and counted in the log when nobody collects it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, openSession, lines, sseEvents } from './harness.mjs';

let server;
let url;
before(async () => {
  server = await startServer();
  url = new URL('/tools/mcp', server.url);
});
after(() => server.close());

let nextId = 100;

async function waitFor(check, what) {
  for (let i = 0; i < 1000; i++) {
    const value = check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Starts a callback call, streamed as `accept` asks, and drops its stream once the upstream
 *  has the job; resolves to the call's id and its callback URL. */
async function callAndLeave(target, sid, accept, key) {
  const id = nextId++;
  const leave = new AbortController();
  const res = await fetch(target, {
    method: 'POST',
    signal: leave.signal,
    headers: { 'content-type': 'application/json', accept, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'callback_job', arguments: { key } } }),
  });
  assert.equal(res.status, 200);
  const callback = await waitFor(() => server.upstream.jobs.get(key), 'the job');
  leave.abort();
  return { id, callback };
}

/** Posts the job's result to its callback URL, as the workflow would. */
async function finish(callback, body) {
  // The stream has been quiet for over a second by now: the reply is probed for (src/edge/writer.rs).
  await new Promise((r) => setTimeout(r, 1200));
  const applied = await fetch(callback, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  assert.equal(applied.status, 200);
}

/** Pings over NDJSON until a reply carries more than the ping's answer: the kept result goes to
 *  the outbox a moment after the callback was applied (its stream is probed first). */
async function pingUntilKept(target, sid) {
  for (let i = 0; i < 50; i++) {
    const id = 1000 + i;
    const messages = await ndjson(target, sid, { jsonrpc: '2.0', id, method: 'ping' });
    if (messages.length > 1) return { id, messages };
    assert.deepEqual(messages, [{ jsonrpc: '2.0', id, result: {} }]);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the kept result never came');
}

async function ndjson(target, sid, message) {
  const res = await fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/x-ndjson', 'mcp-session-id': sid },
    body: JSON.stringify(message),
  });
  const messages = [];
  for await (const line of lines(res)) if (line.trim()) messages.push(JSON.parse(line));
  return messages;
}

async function sse(res) {
  const messages = [];
  for await (const event of sseEvents(res)) if (event.data) messages.push(JSON.parse(event.data));
  return messages;
}

const result = (id, done) => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: JSON.stringify(done) }], structuredContent: done } });

test('NDJSON: a result whose stream was dropped goes before the reply to the next POST, once', async () => {
  const sid = await openSession(url);
  const { id, callback } = await callAndLeave(url, sid, 'application/x-ndjson', 'outbox-1');
  await finish(callback, '{"rows":1}');
  const next = await pingUntilKept(url, sid);
  assert.deepEqual(next.messages, [result(id, { rows: 1 }), { jsonrpc: '2.0', id: next.id, result: {} }]);
  // Carried once: neither the next POST nor a GET carries it again.
  assert.deepEqual(await ndjson(url, sid, { jsonrpc: '2.0', id: 2, method: 'ping' }), [{ jsonrpc: '2.0', id: 2, result: {} }]);
  const get = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
  assert.equal(get.status, 405);
  await get.body?.cancel();
});

test('SSE before 2025-11-25 (no resumption): the next GET stream carries the result, once', async () => {
  const sid = await openSession(url, '2025-06-18');
  const { id, callback } = await callAndLeave(url, sid, 'application/json, text/event-stream', 'outbox-2');
  await finish(callback, '{"rows":2}');
  // 405 until the result is kept (a moment after the callback: its stream is probed first).
  let get;
  for (let i = 0; i < 50; i++) {
    get = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
    if (get.status === 200) break;
    assert.equal(get.status, 405);
    await get.body?.cancel();
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(get.status, 200);
  assert.deepEqual(await sse(get), [result(id, { rows: 2 })]);
  const again = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
  assert.equal(again.status, 405);
  await again.body?.cancel();
});

test('a client that accepts JSON and SSE: the next POST streams, the kept result first', async () => {
  const sid = await openSession(url, '2025-06-18');
  const { id, callback } = await callAndLeave(url, sid, 'application/json, text/event-stream', 'outbox-3');
  await finish(callback, '{"rows":3}');
  // JSON until the result is kept; then an SSE stream that carries it first.
  let next;
  for (let i = 0; i < 50; i++) {
    next = await post(url, { jsonrpc: '2.0', id: 3, method: 'ping' }, { 'mcp-session-id': sid, accept: 'application/json, text/event-stream' });
    if (next.headers.get('content-type') === 'text/event-stream') break;
    assert.deepEqual(await next.json(), { jsonrpc: '2.0', id: 3, result: {} });
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(next.headers.get('content-type'), 'text/event-stream');
  assert.deepEqual(await sse(next), [result(id, { rows: 3 }), { jsonrpc: '2.0', id: 3, result: {} }]);
  // Nothing kept any more: JSON again.
  const plain = await post(url, { jsonrpc: '2.0', id: 4, method: 'ping' }, { 'mcp-session-id': sid, accept: 'application/json, text/event-stream' });
  assert.equal(plain.headers.get('content-type'), 'application/json');
  assert.deepEqual(await plain.json(), { jsonrpc: '2.0', id: 4, result: {} });
});

test('a client still reading gets its deferred result on its own stream, with keepalives while it waits, and nothing is kept', async () => {
  const sid = await openSession(url);
  const id = nextId++;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/x-ndjson', 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'callback_job', arguments: { key: 'outbox-4' } } }),
  });
  const callback = await waitFor(() => server.upstream.jobs.get('outbox-4'), 'the job');
  await finish(callback, '{"rows":4}');
  const received = [];
  for await (const line of lines(res)) received.push(line);
  // An empty line probed for the client before the reply (and keeps the stream alive): NDJSON
  // readers skip it.
  assert.deepEqual(received.filter((l) => l.trim()).map((l) => JSON.parse(l)), [result(id, { rows: 4 })]);
  assert.ok(received.includes(''), 'no probe before the reply');
  assert.deepEqual(await ndjson(url, sid, { jsonrpc: '2.0', id: 5, method: 'ping' }), [{ jsonrpc: '2.0', id: 5, result: {} }]);
});

test('a result whose object ends before its reply is out (a trap with the result in hand) is delivered by the alarm, once', async () => {
  const sid = await openSession(url);
  const id = nextId++;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/x-ndjson', 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'callback_job', arguments: { key: 'outbox-6' } } }),
  });
  const callback = await waitFor(() => server.upstream.jobs.get('outbox-6'), 'the job');
  // The test build panics once the waiting call has the result in hand.
  await fetch(callback, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"note":"mcp-edge/test-panic-in-hand"}' });
  const ended = [];
  for await (const line of lines(res)) if (line.trim()) ended.push(JSON.parse(line));
  assert.deepEqual(ended.map((m) => [m.id, m.error?.code]), [[null, -32603]], 'the stream ends with the rescue');
  // The alarm (rung here at once; by itself 5 s after the result came) finds the result kept on
  // its record, undelivered, and keeps the reply for the client.
  const alarm = await fetch(url, { method: 'POST', headers: { 'x-mcp-edge-test-hook': 'alarm', 'mcp-session-id': sid } });
  assert.equal(alarm.status, 204);
  const next = await pingUntilKept(url, sid);
  assert.deepEqual(next.messages, [result(id, { note: 'mcp-edge/test-panic-in-hand' }), { jsonrpc: '2.0', id: next.id, result: {} }]);
  assert.deepEqual(await ndjson(url, sid, { jsonrpc: '2.0', id: 7, method: 'ping' }), [{ jsonrpc: '2.0', id: 7, result: {} }]);
});

test('a kept result nobody collects goes after pendingTimeoutMs plus the idle timeout, counted in the log', async () => {
  const short = new URL('/short/mcp', server.url);
  const sid = await openSession(short);
  const { callback } = await callAndLeave(short, sid, 'application/x-ndjson', 'outbox-5');
  await finish(callback, '{"rows":5}');
  // /short/mcp: pendingTimeoutMs 3000, idle 1500. The session is kept for the result, then ends.
  const line = await waitFor(() => server.logs.find((l) => l.includes('kept replies dropped') && l.includes(sid)), 'the log line');
  assert.deepEqual(JSON.parse(line), { message: 'kept replies dropped', sessionId: sid, count: 1, why: 'not collected in time' });
});
