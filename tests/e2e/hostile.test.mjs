// Hostile upstreams end within the call's time budget (issue 25): each is an isError result, or a
// clean cancel, within the tool's timeoutMs (1500 ms here), and mcp-edge lets go of the upstream's
// connection rather than keep reading. The session goes on after each. Memory across many such
// calls is watched by the soak run (`npm run soak`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, openSession, sseEvents } from './harness.mjs';

let server;
let url;
let sid;
before(async () => {
  server = await startServer();
  url = new URL('/tools/mcp', server.url);
  sid = await openSession(url);
});
after(() => server.close());

const TIMEOUT_MS = 1500;
let nextId = 1;

/** Calls the hostile tool; the reply must come within the tool's timeout (and a margin for a
 *  loaded machine), or the fetch gives up and the test fails. */
async function hostile(kind, key = `${kind}-${nextId}`) {
  const id = nextId++;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hostile', arguments: { kind, key } } }),
    signal: AbortSignal.timeout(TIMEOUT_MS + 3000),
  });
  assert.equal(res.status, 200);
  const reply = await res.json();
  assert.equal(reply.id, id);
  return { result: reply.result, upstream: server.upstream.hostile.get(key) };
}

const timedOut = { content: [{ type: 'text', text: `The upstream did not answer within ${TIMEOUT_MS} ms.` }], isError: true };

for (const [kind, what] of [
  ['drip', 'drips one byte a second'],
  ['stall', 'sends its headers and then nothing'],
  ['endless', 'never ends its body'],
]) {
  test(`an upstream that ${what}: isError at its timeout, its connection let go`, async () => {
    const { result, upstream } = await hostile(kind);
    assert.deepEqual(result, timedOut);
    // The worker aborted the fetch: the upstream saw its response closed before it was done.
    for (let i = 0; i < 100 && !upstream.closed; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(upstream.closed, 'the upstream connection was not released');
  });
}

test('an upstream whose text claims UTF-8 and is not: isError, naming the first bad byte', async () => {
  const { result } = await hostile('bad-utf8');
  assert.deepEqual(result, { content: [{ type: 'text', text: "The upstream's reply is not valid UTF-8, as its Content-Type (text/plain; charset=utf-8) says it is: an invalid byte at offset 3." }], isError: true });
});

test('an upstream that sends 100 KB of headers: isError, its body not read', async () => {
  const { result } = await hostile('big-headers');
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /its reply headers are \d+ bytes, over the 65536 bytes mcp-edge reads/);
});

test('an upstream that answers after the client cancelled: no reply to the cancelled call, the answer goes nowhere', async () => {
  const id = nextId++;
  const key = `late-${id}`;
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hostile', arguments: { kind: 'late', key } } }),
  });
  assert.equal(res.status, 200);
  await server.upstream.waitForHold(key);
  const cancel = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'changed my mind' } }, { 'mcp-session-id': sid });
  assert.equal(cancel.status, 202);
  // The call's stream ends with no reply for it.
  const messages = [];
  for await (const event of sseEvents(res)) if (event.data) messages.push(JSON.parse(event.data));
  assert.deepEqual(messages, []);
  const upstream = server.upstream.hostile.get(key);
  for (let i = 0; i < 100 && !upstream.closed; i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(upstream.closed, 'the cancelled call did not let go of its upstream');
  // The upstream answers now, too late: nobody hears it, and the session goes on.
  server.upstream.release(key, 'too late');
  assert.equal(upstream.done, false);
  const ping = await post(url, { jsonrpc: '2.0', id: nextId++, method: 'ping' }, { 'mcp-session-id': sid });
  assert.deepEqual((await ping.json()).result, {});
});

test('after every hostile upstream, the session still calls tools', async () => {
  const res = await post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'hostile', arguments: { kind: 'bad-utf8', key: 'last' } } }, { 'mcp-session-id': sid });
  assert.equal((await res.json()).result.isError, true);
  const list = await post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/list' }, { 'mcp-session-id': sid });
  assert.ok((await list.json()).result.tools.some((t) => t.name === 'hostile'));
});
