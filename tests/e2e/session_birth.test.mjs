// A session begun without waiting for its object: the Worker answers `initialize` with a
// self-proving id (random, issue time, and a signature over both and the principal) and writes
// the session to its object behind the reply. Requests that outrun the write wait for it; a
// forged, altered, another principal's, deleted or never-written id is not found.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { INIT, TOKENS, post, startMiniflare, startServer, freshPersistDir } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';

// The write arrives this late (a test build's hook), as a busy object's would.
const DELAY_MS = 3000;
let server;
before(async () => {
  server = await startServer({ bindings: { MCP_EDGE_TEST_BIRTH_DELAY_MS: String(DELAY_MS) } });
});
after(() => server.close());

const SHAPE = /^([0-9a-f]{32})-([0-9a-f]{12})-([0-9a-f]{64})$/;
const list = (id) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
const echo = (id, message) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } });

async function begin(url, headers = {}) {
  const started = Date.now();
  const res = await post(url, INIT, headers);
  assert.equal(res.status, 200, await res.clone().text());
  const body = await res.json();
  return { sid: res.headers.get('mcp-session-id'), body, elapsed: Date.now() - started };
}

async function notFound(res) {
  assert.equal(res.status, 404);
  assert.equal((await res.json()).error.code, -32001);
}

test('initialize is answered before the session reaches its object; the id carries its issue time', async () => {
  const { sid, body, elapsed } = await begin(server.mcpUrl);
  // The write waits DELAY_MS in this build: an answer that waited for it would come after.
  assert.ok(elapsed < DELAY_MS, `answered after ${elapsed} ms`);
  assert.equal(body.result.serverInfo.name, 'mcp-edge-test');
  const [, , issued] = sid.match(SHAPE);
  assert.ok(Math.abs(parseInt(issued, 16) - Date.now()) < 60_000);
  // The isolate that answered serves the session's plain calls from the start.
  const call = await post(server.mcpUrl, echo(1, 'at once'), { 'mcp-session-id': sid });
  assert.equal((await call.json()).result.structuredContent.message, 'at once');
});

test('a request the object must serve waits for the session to be written, then is served', async () => {
  const { sid } = await begin(server.mcpUrl);
  const [ack, listed] = await Promise.all([
    post(server.mcpUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid }),
    post(server.mcpUrl, list(2), { 'mcp-session-id': sid }),
  ]);
  assert.equal(ack.status, 202);
  assert.equal(listed.status, 200);
  assert.ok((await listed.json()).result.tools.some((t) => t.name === 'echo'));
});

test('DELETE before the write lands ends the session once it has arrived', async () => {
  const { sid } = await begin(server.mcpUrl);
  const ended = await fetch(server.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(ended.status, 200);
  await notFound(await post(server.mcpUrl, echo(3, 'after'), { 'mcp-session-id': sid }));
  await notFound(await post(server.mcpUrl, list(4), { 'mcp-session-id': sid }));
});

test('forged and altered ids are not found, without reaching an object', async () => {
  const { sid } = await begin(server.mcpUrl);
  const [, random, issued, signature] = sid.match(SHAPE);
  const flip = (hex) => hex.slice(0, -1) + (hex.endsWith('0') ? '1' : '0');
  const forged = [
    `${'0'.repeat(32)}-${issued}-${signature}`,
    `${random}-${flip(issued)}-${signature}`,
    `${random}-${issued}-${flip(signature)}`,
    `${random}-${issued}-${'f'.repeat(64)}`,
    `${random}-${Date.now().toString(16).padStart(12, '0')}-${signature}`,
    // A UUID names an earlier build's session: its object says it does not exist.
    '9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e',
    sid.toUpperCase(),
    `${sid}-0`,
  ];
  for (const id of forged) {
    const started = Date.now();
    await notFound(await post(server.mcpUrl, echo(5, 'forged'), { 'mcp-session-id': id }));
    // An object would have waited for a fresh id's write, for the whole window (10 s).
    assert.ok(Date.now() - started < 5000, `${id} waited ${Date.now() - started} ms`);
    await notFound(await post(server.mcpUrl, list(6), { 'mcp-session-id': id }));
    const get = await fetch(server.mcpUrl, { headers: { accept: 'text/event-stream', 'mcp-session-id': id } });
    assert.equal(get.status, 404, id);
    const del = await fetch(server.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': id } });
    assert.equal(del.status, 404, id);
  }
  // The real id still works.
  assert.equal((await post(server.mcpUrl, echo(7, 'real'), { 'mcp-session-id': sid })).status, 200);
});

test("a session is its principal's: another principal's request with its id is not found", async () => {
  const url = new URL('/auth/mcp', server.url);
  const bot = { authorization: `Bearer ${TOKENS.BOT_TOKEN}` };
  const admin = { authorization: `Bearer ${TOKENS.ADMIN_KEY}` };
  const { sid } = await begin(url, bot);
  await notFound(await post(url, list(8), { ...admin, 'mcp-session-id': sid }));
  await notFound(await post(url, echo(9, 'theirs'), { ...admin, 'mcp-session-id': sid }));
  const listed = await post(url, list(10), { ...bot, 'mcp-session-id': sid });
  assert.equal(listed.status, 200);
});

test('a session whose write never arrives within its window is not found, and the late write is refused', async () => {
  // The write comes after the object's window (10 s) closed.
  const late = await startServer({ bindings: { MCP_EDGE_TEST_BIRTH_DELAY_MS: '10500' } });
  try {
    const { sid } = await begin(new URL('/direct/mcp', late.url));
    const url = new URL('/direct/mcp', late.url);
    // leaseMs 0 on this server: the call goes to the object, which waits out the window.
    await notFound(await post(url, echo(11, 'never written'), { 'mcp-session-id': sid }));
    await new Promise((r) => setTimeout(r, 1500));
    await notFound(await post(url, list(12), { 'mcp-session-id': sid }));
    assert.ok(late.logs.some((l) => l.includes('a new session could not be written to its object')), late.logs.join('\n'));
  } finally {
    await late.close();
  }
});

test('a self-proving session survives a restart of the Worker and its objects', async () => {
  const upstream = await startTestUpstream();
  const persist = freshPersistDir();
  const first = await startMiniflare({ upstreamUrl: upstream.url, persist });
  let second;
  try {
    const { sid } = await begin(new URL('/mcp', first.url));
    // Written behind the reply: a request to the object waits for it.
    assert.equal((await post(new URL('/mcp', first.url), list(13), { 'mcp-session-id': sid })).status, 200);
    await first.mf.dispose();
    second = await startMiniflare({ upstreamUrl: upstream.url, persist });
    const url = new URL('/mcp', second.url);
    const call = await post(url, echo(14, 'after the restart'), { 'mcp-session-id': sid });
    assert.equal((await call.json()).result.structuredContent.message, 'after the restart');
    assert.equal((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid } })).status, 200);
    await notFound(await post(url, echo(15, 'deleted'), { 'mcp-session-id': sid }));
  } finally {
    await second?.mf.dispose();
    await upstream.close();
  }
});
