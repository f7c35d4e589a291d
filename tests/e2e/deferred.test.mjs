// Queued and callback tools (issue 5), end to end in workerd: a Cloudflare Queue (Miniflare's)
// carries queued calls to the consumer in the same worker, with retries and a dead-letter queue;
// callback tools get a signed one-time URL that is applied at most once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, startMiniflare, freshPersistDir, post, openSession, sseEvents, INIT } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';

let server;
let url;
before(async () => {
  server = await startServer();
  url = new URL('/tools/mcp', server.url);
});
after(() => server.close());

let nextId = 1;
function callRequest(target, sid, name, args, accept = 'application/json') {
  const id = nextId++;
  const response = fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
  });
  return { id, response };
}

async function call(sid, name, args) {
  const { response } = callRequest(url, sid, name, args);
  const res = await response;
  assert.equal(res.status, 200);
  return (await res.json()).result;
}

async function waitFor(check) {
  for (let i = 0; i < 1000; i++) {
    const value = check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('timed out waiting');
}

const error = (text) => ({ content: [{ type: 'text', text }], isError: true });

test('a queued call is fetched by the queue consumer and its result answers the request', async () => {
  const sid = await openSession(url);
  const before = server.upstream.seen.length;
  assert.deepEqual(await call(sid, 'queued_echo', { message: 'via the queue' }), {
    content: [{ type: 'text', text: '{"message":"via the queue"}' }],
    structuredContent: { message: 'via the queue' },
  });
  const fetched = server.upstream.seen.slice(before).filter((r) => r.url === '/echo');
  assert.equal(fetched.length, 1);
});

test('the queue retries 503s, and a call that never succeeds ends in the dead-letter queue as an isError result', async () => {
  const sid = await openSession(url);
  assert.deepEqual((await call(sid, 'queued_flaky', { key: 'q1', fails: 2 })).structuredContent, { attempts: 3 });
  // maxRetries 2: three attempts, then the dead-letter queue reports the last failure.
  assert.deepEqual(await call(sid, 'queued_flaky', { key: 'q2', fails: 99 }), error('The queued call failed on every attempt the queue made: The upstream answered HTTP 503 (text/plain): busy (attempt 3)'));
  assert.equal(server.upstream.attempts.get('q2'), 3);
});

test('a pending call times out with an isError result', async () => {
  const sid = await openSession(url);
  const start = Date.now();
  assert.deepEqual(await call(sid, 'queued_hang', { key: 'q3' }), error('The queued call did not finish within 1500 ms.'));
  assert.ok(Date.now() - start >= 1500);
});

test('a callback tool: the upstream answers 202, posts the result later, and the callback is applied once', async () => {
  const sid = await openSession(url);
  const { id, response } = callRequest(url, sid, 'callback_job', { key: 'j1' }, 'text/event-stream');
  const callbackUrl = await waitFor(() => server.upstream.jobs.get('j1'));
  assert.match(callbackUrl, new RegExp(`^${server.url.origin}/callbacks/${sid}\\.[0-9a-f]{32}\\.[0-9a-f]{64}$`));
  const applied = await fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"report":"done","rows":42}' });
  assert.equal(applied.status, 200);
  assert.deepEqual(await applied.json(), { applied: true });
  const res = await response;
  const messages = [];
  for await (const event of sseEvents(res)) if (event.data) messages.push(JSON.parse(event.data));
  assert.deepEqual(messages, [{ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: '{"report":"done","rows":42}' }], structuredContent: { report: 'done', rows: 42 } } }]);
  // A duplicate is refused and changes nothing.
  const again = await fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"report":"twice"}' });
  assert.equal(again.status, 410);
  // Forged tokens never reach a session.
  const forged = callbackUrl.replace(/[0-9a-f]{4}$/, (s) => (s === '0000' ? '1111' : '0000'));
  for (const bad of [forged, `${server.url.origin}/callbacks/${sid}.abc.def`, `${server.url.origin}/callbacks/nonsense`]) {
    const res = await fetch(bad, { method: 'POST', body: '{}' });
    assert.equal(res.status, 404, bad);
    assert.equal((await res.json()).error.message, 'Not Found: unknown callback');
  }
});

test('a late callback gets 410 after its call timed out', async () => {
  const sid = await openSession(url);
  const result = await call(sid, 'callback_short', { key: 'j2' });
  assert.deepEqual(result, error('The callback call did not finish within 1000 ms.'));
  const late = await fetch(server.upstream.jobs.get('j2'), { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'too late' });
  assert.equal(late.status, 410);
  assert.match((await late.json()).error.message, /^Gone: /);
});

test('an upstream that answers at once instead of 202 gives the result directly', async () => {
  const sid = await openSession(url);
  const result = await call(sid, 'callback_sync', {});
  assert.equal(result.structuredContent.path, '/mirror/sync');
  assert.match(result.structuredContent.body, /^\{\}$/);
});

test('ending the session ends its pending calls: the call gets an isError result, its callback 410', async () => {
  const sid = await openSession(url);
  const { response } = callRequest(url, sid, 'callback_job', { key: 'j3' });
  const callbackUrl = await waitFor(() => server.upstream.jobs.get('j3'));
  const deleted = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(deleted.status, 200);
  const { result } = await (await response).json();
  assert.deepEqual(result, error('The session ended before the call\'s result arrived.'));
  const late = await fetch(callbackUrl, { method: 'POST', body: '{}' });
  assert.equal(late.status, 410);
});

test('a cancelled pending call gets no reply, and its callback is refused', async () => {
  const sid = await openSession(url);
  const { id, response } = callRequest(url, sid, 'callback_job', { key: 'j4' });
  const callbackUrl = await waitFor(() => server.upstream.jobs.get('j4'));
  const cancel = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }, { 'mcp-session-id': sid });
  assert.equal(cancel.status, 202);
  assert.equal((await response).status, 202);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal((await fetch(callbackUrl, { method: 'POST', body: '{}' })).status, 410);
});

test('a result that finds no waiting call (the object restarted) goes to the GET stream', async () => {
  const upstream = await startTestUpstream();
  const persist = freshPersistDir();
  const first = await startMiniflare({ upstreamUrl: upstream.url, persist });
  const target = new URL('/tools/mcp', first.url);
  const sid = await openSession(target);
  const { id, response } = callRequest(target, sid, 'callback_job', { key: 'j5' }, 'text/event-stream');
  const callbackUrl = await waitFor(() => upstream.jobs.get('j5'));
  await (await response).body?.cancel().catch(() => {});
  await first.mf.dispose();
  const second = await startMiniflare({ upstreamUrl: upstream.url, persist });
  try {
    const moved = new URL(new URL(callbackUrl).pathname, second.url);
    const applied = await fetch(moved, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'finished while you were away' });
    assert.equal(applied.status, 200);
    const get = await fetch(new URL('/tools/mcp', second.url), { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
    assert.equal(get.status, 200);
    const messages = [];
    for await (const event of sseEvents(get)) if (event.data) messages.push(JSON.parse(event.data));
    assert.deepEqual(messages, [{ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'finished while you were away' }] } }]);
  } finally {
    await second.mf.dispose();
    await upstream.close();
  }
});
