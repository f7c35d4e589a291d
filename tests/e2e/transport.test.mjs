// Streamable HTTP as raw HTTP: framing negotiation, /stream, CORS, and every error status.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, openSession, lines } from './harness.mjs';

let server;
let url;
let sid;
before(async () => {
  server = await startServer();
  url = server.mcpUrl;
  sid = await openSession(url);
});
after(() => server.close());

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const list = (id = 2) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
const echo = (id, message) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } });

test('initialize answers the negotiated version and a UUID v4 session id', async () => {
  const res = await post(url, { jsonrpc: '2.0', id: '1', method: 'initialize', params: { protocolVersion: '2025-03-26' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.match(res.headers.get('mcp-session-id'), /^[0-9a-f]{32}-[0-9a-f]{12}-[0-9a-f]{64}$/);
  assert.deepEqual(await res.json(), {
    jsonrpc: '2.0',
    id: '1',
    result: { protocolVersion: '2025-03-26', capabilities: { tools: { listChanged: false }, logging: {}, resources: { subscribe: true, listChanged: false } }, serverInfo: { name: 'mcp-edge-test', version: '0.0.1' } },
  });
  // The seed 003 curl recipe: empty params, both Accept types, latest version; SSE alone streams.
  const both = await post(url, { jsonrpc: '2.0', id: '1', method: 'initialize', params: {} }, { accept: 'application/json, text/event-stream' });
  assert.equal(both.headers.get('content-type'), 'application/json');
  assert.equal((await both.json()).result.protocolVersion, '2025-11-25');
  const sse = await post(url, { jsonrpc: '2.0', id: '1', method: 'initialize', params: {} }, { accept: 'text/event-stream' });
  assert.equal(sse.headers.get('content-type'), 'text/event-stream');
  const text = await sse.text();
  assert.match(text, /^data: \{"jsonrpc":"2.0","id":"1","result":\{"protocolVersion":"2025-11-25",/);
  assert.ok(text.endsWith('}\n\n'));
  const ids = new Set([res.headers.get('mcp-session-id'), sse.headers.get('mcp-session-id'), sid]);
  assert.equal(ids.size, 3, 'every initialize creates a new session');
});

test('JSON and SSE both acceptable: a call answers JSON unless it has something to stream first', async () => {
  const both = { accept: 'application/json, text/event-stream', 'mcp-session-id': sid };
  const plain = await post(url, echo(1, 'plain'), both);
  assert.equal(plain.headers.get('content-type'), 'application/json');
  assert.deepEqual((await plain.json()).result.structuredContent, { message: 'plain' });
  // This upstream streams progress before its result: the reply switches to SSE.
  const key = 'lazy-sse';
  const streamed = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stream_hold', arguments: { key }, _meta: { progressToken: 'lz' } } }, both);
  assert.equal(streamed.headers.get('content-type'), 'text/event-stream');
  await server.upstream.waitForHold(key);
  server.upstream.release(key, 'streamed');
  const text = await streamed.text();
  assert.match(text, /^id: (\d+)-0\nretry: 1000\ndata: \n\nid: \1-1\ndata: \{"jsonrpc":"2.0","method":"notifications\/progress"/);
  assert.match(text, /"text":"streamed"/);
});

test('notifications/initialized gets 202 with an empty body', async () => {
  const res = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid });
  assert.equal(res.status, 202);
  assert.equal(await res.text(), '');
});

test('Accept chooses JSON, SSE or NDJSON, byte for byte', async () => {
  const ping = { jsonrpc: '2.0', id: 9, method: 'ping' };
  const want = '{"jsonrpc":"2.0","id":9,"result":{}}';
  const cases = [
    ['application/json', 'application/json', want],
    ['*/*', 'application/json', want],
    ['application/json, text/plain, */*', 'application/json', want],
    // SSE in a 2025-11-25 session: a priming event (id, retry, empty data), then the reply with its id.
    ['text/event-stream', 'text/event-stream', new RegExp(`^id: (\\d+)-0\nretry: 1000\ndata: \n\nid: \\1-1\ndata: ${escape(want)}\n\n$`)],
    // Both JSON and SSE: JSON, since a ping has nothing to stream.
    ['application/json, text/event-stream', 'application/json', want],
    ['application/x-ndjson', 'application/x-ndjson', `${want}\n`],
    ['application/ndjson', 'application/x-ndjson', `${want}\n`],
    ['text/plain', 'application/x-ndjson', `${want}\n`],
    ['application/x-ndjson;q=0, application/json', 'application/json', want],
  ];
  for (const [accept, type, body] of cases) {
    const res = await post(url, ping, { accept, 'mcp-session-id': sid });
    assert.equal(res.status, 200, accept);
    assert.equal(res.headers.get('content-type'), type, accept);
    if (body instanceof RegExp) assert.match(await res.text(), body, accept);
    else assert.equal(await res.text(), body, accept);
    if (type !== 'application/json') {
      assert.equal(res.headers.get('cache-control'), 'no-cache', accept);
      assert.equal(res.headers.get('x-accel-buffering'), 'no', accept);
    }
    assert.equal(res.headers.get('mcp-session-id'), sid, accept);
  }
  // No Accept at all: JSON; no Accept with an NDJSON body (seed 004's client): NDJSON.
  const bare = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'mcp-session-id': sid }, body: JSON.stringify(ping) });
  assert.equal(await bare.text(), want);
  const nd = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', 'mcp-session-id': sid }, body: JSON.stringify(ping) + '\n' });
  assert.equal(nd.headers.get('content-type'), 'application/x-ndjson');
  assert.equal(await nd.text(), `${want}\n`);
});

test('POST /stream always streams: NDJSON unless SSE is asked for', async () => {
  const stream = new URL('/stream', url);
  const ping = { jsonrpc: '2.0', id: 'p', method: 'ping' };
  const a = await post(stream, ping, { accept: 'application/json', 'mcp-session-id': sid });
  assert.equal(a.headers.get('content-type'), 'application/x-ndjson');
  assert.equal(await a.text(), '{"jsonrpc":"2.0","id":"p","result":{}}\n');
  const b = await post(stream, ping, { accept: 'text/event-stream', 'mcp-session-id': sid });
  assert.equal(b.headers.get('content-type'), 'text/event-stream');
  assert.match(await b.text(), /^id: (\d+)-0\nretry: 1000\ndata: \n\nid: \1-1\ndata: \{"jsonrpc":"2.0","id":"p","result":\{\}\}\n\n$/);
});

test('an NDJSON body gets one reply line per request, each as soon as it is ready', async () => {
  const body = [
    { jsonrpc: '2.0', id: 'held', method: 'tools/call', params: { name: 'hold', arguments: { key: 'ndjson-order' } } },
    echo('fast', 'quick'),
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  ].map((m) => JSON.stringify(m)).join('\n');
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', accept: 'application/x-ndjson', 'mcp-session-id': sid }, body });
  const reader = lines(res);
  const first = JSON.parse((await reader.next()).value);
  assert.equal(first.id, 'fast', 'the fast call is answered while the held one still waits');
  await server.upstream.waitForHold('ndjson-order');
  server.upstream.release('ndjson-order', 'released');
  const second = JSON.parse((await reader.next()).value);
  assert.deepEqual(second, { jsonrpc: '2.0', id: 'held', result: { content: [{ type: 'text', text: 'released' }] } });
  assert.equal((await reader.next()).done, true);
});

test('streamed lines pass through compression one by one (Accept-Encoding: gzip)', async () => {
  for (const accept of ['application/x-ndjson', 'text/event-stream']) {
    const key = `gzip-${accept}`;
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'stream_hold', arguments: { key }, _meta: { progressToken: 'tok' } } };
    const res = await post(url, call, { accept, 'accept-encoding': 'gzip', 'mcp-session-id': sid });
    assert.equal(res.status, 200);
    const reader = lines(res);
    const next = async () => {
      for (;;) {
        const { value } = await reader.next();
        // SSE id, retry and priming lines carry no message.
        const json = value?.replace(/^data: /, '');
        if (json?.startsWith('{')) return JSON.parse(json);
      }
    };
    // The upstream's progress and log lines arrive while its result is still held back.
    await server.upstream.waitForHold(key);
    const progress = { progressToken: 'tok', progress: 1, total: 2, message: 'started' };
    assert.deepEqual(await next(), { jsonrpc: '2.0', method: 'notifications/progress', params: progress });
    if (accept === 'application/x-ndjson') {
      // Seed 003's progress.update accompanies the standard notification for NDJSON clients.
      assert.deepEqual(await next(), { jsonrpc: '2.0', method: 'progress.update', params: progress });
    }
    assert.deepEqual(await next(), { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', logger: 'upstream', data: 'working' } });
    server.upstream.release(key, 'done');
    assert.deepEqual(await next(), { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'done' }] } });
  }
});

test('JSON-RPC errors: parse, invalid request, unknown method', async () => {
  const parse = await post(url, '{"jsonrpc": "2.0", "id": 1, "method": ', { 'mcp-session-id': sid });
  assert.equal(parse.status, 400);
  const p = await parse.json();
  assert.equal(p.id, null);
  assert.equal(p.error.code, -32700);

  const invalid = await post(url, { jsonrpc: '1.0', id: 4, method: 'ping' }, { 'mcp-session-id': sid });
  assert.equal(invalid.status, 400);
  assert.deepEqual(await invalid.json(), { jsonrpc: '2.0', id: 4, error: { code: -32600, message: 'Invalid Request: "jsonrpc" must be "2.0"' } });

  const unknown = await post(url, { jsonrpc: '2.0', id: 5, method: 'nope/nothing' }, { 'mcp-session-id': sid });
  assert.equal(unknown.status, 200);
  assert.deepEqual(await unknown.json(), { jsonrpc: '2.0', id: 5, error: { code: -32601, message: 'Method not found: nope/nothing' } });
});

test('session errors: 400 without an id, 404 for an unknown one, DELETE then 404', async () => {
  const missing = await post(url, list());
  assert.equal(missing.status, 400);
  assert.deepEqual(await missing.json(), { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' } });

  const unknown = await post(url, list(), { 'mcp-session-id': '3b0c4f2e-0000-4000-8000-000000000000' });
  assert.equal(unknown.status, 404);
  assert.deepEqual(await unknown.json(), { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });

  const doomed = await openSession(url);
  const del = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': doomed } });
  assert.equal(del.status, 200);
  const after = await post(url, list(), { 'mcp-session-id': doomed });
  assert.equal(after.status, 404);
  assert.equal((await after.json()).error.code, -32001);
  const again = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': doomed } });
  assert.equal(again.status, 404);
  // Other sessions are untouched.
  assert.equal((await post(url, list(), { 'mcp-session-id': sid })).status, 200);
});

test('HTTP errors: 405, 406, 413, 415, and 404 for other paths', async () => {
  const put = await fetch(url, { method: 'PUT', headers: { 'mcp-session-id': sid } });
  assert.equal(put.status, 405);
  assert.equal(put.headers.get('allow'), 'GET, POST, DELETE, OPTIONS');
  assert.equal((await put.json()).error.code, -32000);
  const getStream = await fetch(new URL('/stream', url));
  assert.equal(getStream.status, 405);
  assert.equal(getStream.headers.get('allow'), 'POST, OPTIONS');

  const html = await post(url, list(), { accept: 'text/html', 'mcp-session-id': sid });
  assert.equal(html.status, 406);

  const big = await post(url, echo(1, 'x'.repeat(70_000)), { 'mcp-session-id': sid });
  assert.equal(big.status, 413);
  assert.match((await big.json()).error.message, /65536 bytes/);

  const form = await post(url, 'a=b', { 'content-type': 'application/x-www-form-urlencoded', 'mcp-session-id': sid });
  assert.equal(form.status, 415);

  const other = await post(new URL('/elsewhere', url), list(), { 'mcp-session-id': sid });
  assert.equal(other.status, 404);
  // The server still serves.
  assert.equal((await post(url, list(), { 'mcp-session-id': sid })).status, 200);
});

test('CORS: preflight, allowed origins, and 403 for a foreign Origin', async () => {
  const pre = await fetch(url, {
    method: 'OPTIONS',
    headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, mcp-session-id' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), 'http://localhost:5173');
  assert.equal(pre.headers.get('access-control-allow-methods'), 'GET, POST, DELETE, OPTIONS');
  assert.equal(pre.headers.get('access-control-allow-headers'), 'content-type, accept, authorization, mcp-session-id, mcp-protocol-version, last-event-id');
  assert.equal(pre.headers.get('access-control-max-age'), '86400');

  const preStream = await fetch(new URL('/stream', url), { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1:3000' } });
  assert.equal(preStream.status, 204);

  const ok = await post(url, list(), { origin: 'http://127.0.0.1:3000', 'mcp-session-id': sid });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('access-control-allow-origin'), 'http://127.0.0.1:3000');
  assert.equal(ok.headers.get('access-control-expose-headers'), 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate');

  const own = await post(url, list(), { origin: url.origin, 'mcp-session-id': sid });
  assert.equal(own.status, 200);

  const noOrigin = await post(url, list(), { 'mcp-session-id': sid });
  assert.equal(noOrigin.headers.get('access-control-allow-origin'), null);

  const evil = await post(url, list(), { origin: 'https://evil.example', 'mcp-session-id': sid });
  assert.equal(evil.status, 403);
  assert.equal(evil.headers.get('access-control-allow-origin'), null);
  assert.equal((await evil.json()).error.code, -32000);
  const evilPre = await fetch(url, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
  assert.equal(evilPre.status, 403);
});

test('one structured log line per request, without argument values or secrets', async () => {
  await post(url, echo(77, 'very-private-argument'), { 'mcp-session-id': sid });
  await new Promise((r) => setTimeout(r, 200));
  const entries = server.logs.filter((l) => l.startsWith('{"requestId"')).map((l) => JSON.parse(l));
  const call = entries.find((e) => e.tool === 'echo' && e.sessionId === sid);
  assert.ok(call, server.logs.slice(-5).join('\n'));
  assert.equal(call.method, 'tools/call');
  assert.equal(call.status, 200);
  assert.equal(call.http, 'POST /mcp');
  assert.equal(typeof call.durationMs, 'number');
  const all = server.logs.join('\n');
  assert.ok(!all.includes('very-private-argument'));
  assert.ok(!all.includes('test-key-7f3a'));
});

test('JSON batches: an array of replies in request order for 2025-03-26, 400 from 2025-06-18 on', async () => {
  const old = await openSession(url, '2025-03-26');
  const batch = [
    { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'echo', arguments: { message: 'first' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 'b', method: 'ping' },
    { jsonrpc: '2.0', id: 'c', method: 'nope' },
  ];
  const res = await post(url, batch, { 'mcp-session-id': old });
  assert.equal(res.status, 200);
  const replies = await res.json();
  assert.deepEqual(replies.map((r) => r.id), ['a', 'b', 'c']);
  assert.deepEqual(replies[0].result.content, [{ type: 'text', text: '{"message":"first"}' }]);
  assert.equal(replies[2].error.code, -32601);

  for (const version of ['2025-06-18', '2025-11-25']) {
    const session = version === '2025-11-25' ? sid : await openSession(url, version);
    const refused = await post(url, batch, { 'mcp-session-id': session });
    assert.equal(refused.status, 400, version);
    assert.deepEqual(await refused.json(), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: `Invalid Request: batches are not supported in protocol version ${version}` },
    });
  }
});

test('DNS rebinding: a loopback request under a foreign Host gets 403 before its body is read', async () => {
  const { request } = await import('node:http');
  const send = (host) =>
    new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', agent: false, headers: { host, 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
    });
  const evil = await send('evil.example.com');
  assert.equal(evil.status, 403);
  assert.deepEqual(JSON.parse(evil.body), { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Forbidden: host "evil.example.com" is not allowed for a local server' } });
  const local = await send(`localhost:${url.port}`);
  assert.equal(local.status, 400, 'a loopback Host passes the check (and then needs a session)');
});
