// Limits and hostile input (issue 6): each limit answers with a clear error while the server, and
// every other session, keeps serving. These are rows of the README's "bad input → what you get".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, INIT, TOKENS, API_KEY } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const limited = () => new URL('/limited/mcp', server.url);
const bot = { authorization: `Bearer ${TOKENS.BOT_TOKEN}` };
const admin = { authorization: `Bearer ${TOKENS.ADMIN_KEY}` };

function rpc(url, body, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function open(url, headers) {
  const res = await rpc(url, INIT, headers);
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  return res.headers.get('mcp-session-id');
}

async function close(url, headers, sid) {
  assert.equal((await fetch(url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': sid } })).status, 200);
}

test('JSON nested deeper than maxJsonDepth: 400 -32600, before parsing', async () => {
  const deep = `{"jsonrpc":"2.0","id":1,"method":"ping","params":${'['.repeat(20)}${']'.repeat(20)}}`;
  const res = await rpc(limited(), deep, bot);
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: the JSON nests deeper than 8 levels' } });
  const hostile = await rpc(limited(), '['.repeat(4000), bot);
  assert.equal(hostile.status, 400);
});

test('headers over maxHeaderBytes: 431', async () => {
  const res = await rpc(limited(), INIT, { ...bot, 'x-padding': 'x'.repeat(5000) });
  assert.equal(res.status, 431);
  assert.equal((await res.json()).error.message, 'Request Header Fields Too Large: the headers exceed 4096 bytes');
});

test('calls beyond maxCallsInFlight get a -32000 error each; the calls in flight finish', async () => {
  const sid = await open(limited(), bot);
  const headers = { ...bot, 'mcp-session-id': sid };
  const call = (id, key) => rpc(limited(), { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { key } } }, headers);
  const first = call(1, 'f1');
  const second = call(2, 'f2');
  await server.upstream.waitForHold('f1');
  await server.upstream.waitForHold('f2');
  const third = await (await call(3, 'f3')).json();
  assert.deepEqual(third, { jsonrpc: '2.0', id: 3, error: { code: -32000, message: 'Too Many Requests: at most 2 calls may run at once in a session; wait for one to finish' } });
  // Another session of the same principal is not affected.
  const other = await open(limited(), bot);
  const echo = await (await rpc(limited(), { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo', arguments: { message: 'free' } } }, { ...bot, 'mcp-session-id': other })).json();
  assert.deepEqual(echo.result.structuredContent, { message: 'free' });
  server.upstream.release('f1', 'one');
  server.upstream.release('f2', 'two');
  assert.equal((await (await first).json()).result.content[0].text, 'one');
  assert.equal((await (await second).json()).result.content[0].text, 'two');
  // All three were served from the Worker's lease on the session, which counts its calls in
  // flight itself.
  await new Promise((r) => setTimeout(r, 100));
  const served = server.logs.filter((l) => l.startsWith('{"requestId"')).map((l) => JSON.parse(l)).filter((e) => e.sessionId === sid && e.method === 'tools/call');
  assert.deepEqual(served.map((e) => e.lease), [true, true, true]);
  await close(limited(), bot, sid);
  await close(limited(), bot, other);
});

test('sessions beyond maxSessionsPerPrincipal: 429; ending one frees its place', async () => {
  const a = await open(limited(), admin);
  const b = await open(limited(), admin);
  const res = await rpc(limited(), INIT, admin);
  assert.equal(res.status, 429);
  assert.equal((await res.json()).error.message, 'Too Many Requests: at most 2 sessions may be open per principal; end one (DELETE) or let it expire');
  // Another principal has its own count.
  const botSid = await open(limited(), bot);
  await close(limited(), admin, a);
  const c = await open(limited(), admin);
  for (const sid of [b, c]) await close(limited(), admin, sid);
  await close(limited(), bot, botSid);
});

test('a request rate over the Rate Limiting binding: 429 with Retry-After', async () => {
  const url = new URL('/rated/mcp', server.url);
  const statuses = [];
  let limitedRes;
  for (let i = 0; i < 7; i++) {
    const res = await rpc(url, INIT);
    statuses.push(res.status);
    if (res.status === 429) limitedRes = res;
    else await res.text();
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
  assert.equal(limitedRes.headers.get('retry-after'), '60');
  assert.equal((await limitedRes.json()).error.message, 'Too Many Requests: slow down and retry after 60 s');
  // Other servers are not rate limited by it.
  assert.equal((await rpc(limited(), { jsonrpc: '2.0', id: 1, method: 'ping' }, bot)).status, 400);
});

test('secrets never come back: an upstream that quotes them is redacted', async () => {
  const sid = await open(limited(), bot);
  const res = await rpc(limited(), { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'leaky', arguments: {} } }, { ...bot, 'mcp-session-id': sid });
  const body = await res.text();
  assert.ok(!body.includes(API_KEY), body);
  assert.deepEqual(JSON.parse(body).result, { content: [{ type: 'text', text: 'The upstream answered HTTP 500 (text/plain): bad key [redacted] (query [redacted])' }], isError: true });
  assert.ok(!server.logs.some((line) => line.includes(API_KEY)), 'a log line holds the secret');
  await close(limited(), bot, sid);
});

test('20 concurrent sessions that all use id 1 each get exactly their own reply', async () => {
  const mcp = new URL('/mcp', server.url);
  const sessions = await Promise.all(Array.from({ length: 20 }, () => open(mcp, {})));
  const replies = await Promise.all(sessions.map(async (sid, i) => {
    const res = await rpc(mcp, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: `session ${i}` } } }, { 'mcp-session-id': sid });
    return res.json();
  }));
  replies.forEach((reply, i) => {
    assert.equal(reply.id, 1);
    assert.deepEqual(reply.result.structuredContent, { message: `session ${i}` });
  });
});
