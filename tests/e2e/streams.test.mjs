// SSE streams of a session: event ids, priming by negotiated version, early close and resumption
// with Last-Event-ID, the standalone GET stream, and the MCP-Protocol-Version header.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, post, openSession, sseEvents } from './harness.mjs';

let server;
let url;
before(async () => {
  server = await startServer();
  url = server.mcpUrl;
});
after(() => server.close());

const call = (id, name, key) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { key }, _meta: { progressToken: `p-${key}` } } });
const sse = { accept: 'application/json, text/event-stream' };

test('a closed stream resumes with Last-Event-ID and replays only its own events', async () => {
  const sid = await openSession(url, '2025-11-25');
  const first = await post(url, call(1, 'poll_hold', 'r1'), { ...sse, 'mcp-session-id': sid });
  const other = await post(url, call(2, 'stream_hold', 'r2'), { ...sse, 'mcp-session-id': sid });
  const got = [];
  for await (const e of sseEvents(first)) got.push(e);
  // Priming (id, retry, empty data), then the upstream's progress and log, then the early close.
  assert.equal(got.length, 3, JSON.stringify(got));
  const [priming, progress, log] = got;
  assert.match(priming.id, /^\d+-0$/);
  assert.equal(priming.retry, '1000');
  assert.equal(priming.data, '');
  const stream = priming.id.split('-')[0];
  assert.equal(progress.id, `${stream}-1`);
  assert.equal(JSON.parse(progress.data).params.progressToken, 'p-r1');
  assert.equal(log.id, `${stream}-2`);

  const resumed = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': `${stream}-1` } });
  assert.equal(resumed.status, 200);
  // The same stream cannot be attached twice.
  const twice = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': `${stream}-1` } });
  assert.equal(twice.status, 409);
  await server.upstream.waitForHold('r1');
  server.upstream.release('r1', 'first done');
  const replay = [];
  for await (const e of sseEvents(resumed)) replay.push(e);
  assert.deepEqual(replay.map((e) => e.id), [`${stream}-2`, `${stream}-3`]);
  assert.equal(JSON.parse(replay[0].data).method, 'notifications/message');
  assert.deepEqual(JSON.parse(replay[1].data), { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'first done' }] } });
  assert.ok(!replay.some((e) => e.data.includes('p-r2')), 'events of another stream never appear');

  server.upstream.release('r2', 'second done');
  const otherEvents = [];
  for await (const e of sseEvents(other)) otherEvents.push(e);
  assert.notEqual(otherEvents[0].id.split('-')[0], stream);
  assert.ok(otherEvents.some((e) => e.data.includes('second done')));

  const unknown = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': '999-0' } });
  assert.equal(unknown.status, 400);
});

test('sessions before 2025-11-25 get event ids but no priming event and no early close', async () => {
  const sid = await openSession(url, '2025-06-18');
  const res = await post(url, call(1, 'poll_hold', 'old'), { ...sse, 'mcp-session-id': sid });
  await server.upstream.waitForHold('old');
  await new Promise((r) => setTimeout(r, 500));
  server.upstream.release('old', 'old done');
  const got = [];
  for await (const e of sseEvents(res)) got.push(e);
  assert.equal(got.length, 3);
  assert.ok(got.every((e) => e.data !== '' && e.retry === undefined && /^\d+-[1-3]$/.test(e.id)));
  assert.match(got[2].data, /old done/);
});

test('the standalone GET stream: held open only for a subscribed session, one at a time', async () => {
  // Nothing subscribed, nothing waiting: no stream is offered, which clients take as normal.
  const idle = await openSession(url, '2025-11-25');
  const quick = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': idle } });
  assert.equal(quick.status, 405);

  const sid = await openSession(url, '2025-11-25');
  await post(url, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'test://other' } }, { 'mcp-session-id': sid });
  const controller = new AbortController();
  const get = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid }, signal: controller.signal });
  assert.equal(get.status, 200);
  assert.equal(get.headers.get('content-type'), 'text/event-stream');
  const second = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
  assert.equal(second.status, 409);
  assert.equal((await second.json()).error.message, 'Conflict: a GET stream is already open for this session');
  const json = await fetch(url, { headers: { accept: 'application/json', 'mcp-session-id': sid } });
  assert.equal(json.status, 406);
  const none = await fetch(url, { headers: { accept: 'text/event-stream' } });
  assert.equal(none.status, 400);
  controller.abort();
});

/** Opens the session's GET stream with node:http, waits for its first bytes, then resets the
 *  connection (TCP RST), as a client that crashes or loses its network does. */
function openAndReset(target, sid) {
  return new Promise((resolve, reject) => {
    const req = http.request(target, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`GET: ${res.statusCode}`));
      res.once('data', () => {
        req.socket.resetAndDestroy();
        resolve();
      });
    });
    req.on('error', () => {});
    req.end();
  });
}

test('a GET stream whose client resets the connection is let go at once (the request signal), not at a keepalive', async () => {
  const sid = await openSession(url, '2025-11-25');
  await post(url, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'test://other' } }, { 'mcp-session-id': sid });
  await openAndReset(url, sid);
  // The keepalive is 20 s away: only the abort signal can have freed the stream this soon.
  let again;
  for (let i = 0; i < 20; i++) {
    again = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
    if (again.status === 200) break;
    assert.equal(again.status, 409);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(again.status, 200, 'the reset stream still held the session');
  await again.body.cancel();
});

test('MCP-Protocol-Version must name a supported version, not necessarily the negotiated one', async () => {
  const sid = await openSession(url, '2025-11-25');
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
  const older = await post(url, ping, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-03-26' });
  assert.equal(older.status, 200);
  const bogus = await post(url, ping, { 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' });
  assert.equal(bogus.status, 400);
  assert.match((await bogus.json()).error.message, /^Bad Request: Unsupported protocol version "1999-01-01"/);
});

test('resource updates reach the subscribed session on its GET stream, and no other session', async () => {
  const { NOTIFY_TOKEN } = await import('./harness.mjs');
  const notify = (token, body = { uri: 'test://watched' }) =>
    fetch(new URL('/notify', url), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const a = await openSession(url, '2025-11-25');
  const b = await openSession(url, '2025-06-18');
  const subscribe = await post(url, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'test://watched' } }, { 'mcp-session-id': a });
  assert.deepEqual(await subscribe.json(), { jsonrpc: '2.0', id: 1, result: {} });
  // Announced while no GET stream is open: kept for the session's next GET.
  const queued = await notify(NOTIFY_TOKEN);
  assert.deepEqual(await queued.json(), { subscribers: 1, delivered: 0 });
  assert.equal((await notify('wrong')).status, 401);

  const closing = new AbortController();
  const streamA = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': a }, signal: closing.signal });
  const eventsA = sseEvents(streamA);
  const update = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'test://watched' } };
  assert.deepEqual((await eventsA.next()).value, { retry: '1000' });
  assert.deepEqual(JSON.parse((await eventsA.next()).value.data), update, 'the queued update comes first');
  const sent = await notify(NOTIFY_TOKEN);
  assert.equal(sent.status, 200);
  assert.deepEqual(await sent.json(), { subscribers: 1, delivered: 1 });
  assert.deepEqual(JSON.parse((await eventsA.next()).value.data), update, 'then live ones');

  // The unsubscribed session has no stream, and nothing waiting for it.
  const streamB = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': b } });
  assert.equal(streamB.status, 405);

  await post(url, { jsonrpc: '2.0', id: 2, method: 'resources/unsubscribe', params: { uri: 'test://watched' } }, { 'mcp-session-id': a });
  const after = await notify(NOTIFY_TOKEN);
  assert.deepEqual(await after.json(), { subscribers: 0, delivered: 0 });
  const bad = await notify(NOTIFY_TOKEN, { nope: 1 });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.message, 'Invalid Request: the body must be {"uri": "<resource URI>"}');
  closing.abort();
  await Promise.allSettled([eventsA.next()]);
});
