// The 2026-07-28 revision beside the session-based ones, on the same server: raw requests
// written from the revision's own examples (basic/transports/streamable-http, server/discover,
// basic/patterns/mrtr, basic/patterns/subscriptions).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, post, openSession, sseEvents, NOTIFY_TOKEN } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const VERSION = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientInfo': { name: 'ExampleClient', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A 2026-07-28 request with the headers the revision requires; `headers` override them. */
function send(method, params = {}, { id = 1, headers = {}, meta = META, accept = 'application/json, text/event-stream' } = {}) {
  const name = method === 'resources/read' ? params.uri : params.name;
  const base = { accept, 'mcp-protocol-version': VERSION, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
  const all = Object.fromEntries(Object.entries({ ...base, ...headers }).filter(([, v]) => v !== undefined));
  return post(server.mcpUrl, { jsonrpc: '2.0', id, method, params: meta === null ? params : { ...params, _meta: meta } }, all);
}

async function json(res, status = 200) {
  assert.equal(res.status, status, `HTTP ${res.status}`);
  assert.match(res.headers.get('content-type'), /^application\/json/);
  return res.json();
}

const SERVER_INFO = { 'io.modelcontextprotocol/serverInfo': { name: 'mcp-edge-test', version: '0.0.1' } };

test('server/discover describes the server initialize describes, with every version and cache hints', async () => {
  const discovered = await json(await send('server/discover', {}, { id: 'discover-1' }));
  const init = await json(await post(server.mcpUrl, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }));
  assert.deepEqual(discovered, {
    jsonrpc: '2.0',
    id: 'discover-1',
    result: {
      supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
      capabilities: init.result.capabilities,
      resultType: 'complete',
      _meta: SERVER_INFO,
      ttlMs: 300000,
      cacheScope: 'public',
    },
  });
  assert.deepEqual(init.result.serverInfo, SERVER_INFO['io.modelcontextprotocol/serverInfo']);
});

test('requests carry their protocol information: missing _meta fields, mismatched headers and unknown versions get 400', async () => {
  const cases = [
    ['no _meta', send('server/discover', {}, { id: 101, meta: null }), -32602],
    ['no protocol version', send('server/discover', {}, { id: 102, meta: { 'io.modelcontextprotocol/clientCapabilities': {} } }), -32602],
    ['no client capabilities', send('server/discover', {}, { id: 103, meta: { 'io.modelcontextprotocol/protocolVersion': VERSION } }), -32602],
    ['version header differs from _meta', send('server/discover', {}, { id: 104, meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } }), -32020],
    ['no Mcp-Method', send('tools/list', {}, { id: 105, headers: { 'mcp-method': undefined } }), -32020],
    ['Mcp-Method differs', send('tools/list', {}, { id: 106, headers: { 'mcp-method': 'prompts/list' } }), -32020],
    ['no Mcp-Name', send('tools/call', { name: 'echo', arguments: { message: 'x' } }, { id: 107, headers: { 'mcp-name': undefined } }), -32020],
    ['Mcp-Name differs', send('tools/call', { name: 'echo', arguments: { message: 'x' } }, { id: 108, headers: { 'mcp-name': 'lookup' } }), -32020],
  ];
  for (const [why, pending, code] of cases) {
    const res = await pending;
    assert.equal(res.status, 400, why);
    const body = await json(res, 400);
    assert.equal(body.error.code, code, why);
    assert.ok(body.id >= 101 && body.id <= 108, `${why}: the id is kept`);
  }
  const unknown = await json(await send('server/discover', {}, { id: 109, meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }, headers: { 'mcp-protocol-version': '2099-01-01' } }), 400);
  assert.deepEqual(unknown, {
    jsonrpc: '2.0',
    id: 109,
    error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'], requested: '2099-01-01' } },
  });
  // Mcp-Name in the Base64 sentinel is decoded before it is compared.
  const encoded = await json(await send('tools/call', { name: 'echo', arguments: { message: 'b64' } }, { headers: { 'mcp-name': '=?base64?ZWNobw==?=' } }));
  assert.equal(encoded.result.content[0].text, '{"message":"b64"}');
});

test('removed and unknown methods are 404 with -32601; GET and DELETE are 405; session ids are ignored', async () => {
  for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'unknown/method']) {
    const body = await json(await send(method, {}, { id: 500 }), 404);
    assert.deepEqual([body.id, body.error.code], [500, -32601], method);
  }
  for (const method of ['GET', 'DELETE']) {
    const res = await fetch(server.mcpUrl, { method, headers: { accept: 'text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-session-id': 'nope', 'last-event-id': '0-1' } });
    assert.equal(res.status, 405, method);
    await res.text();
  }
  // An unknown session id on a 2026-07-28 POST is not looked at, and none is minted.
  const res = await send('tools/list', {}, { headers: { 'mcp-session-id': 'no-such-session' } });
  const body = await json(res);
  assert.equal(res.headers.get('mcp-session-id'), null);
  assert.ok(body.result.tools.some((t) => t.name === 'echo'));
});

test('results carry resultType, serverInfo and, where cacheable, ttlMs and cacheScope', async () => {
  const list = await json(await send('tools/list'));
  assert.deepEqual([list.result.resultType, list.result.ttlMs, list.result.cacheScope, list.result._meta], ['complete', 300000, 'public', SERVER_INFO]);
  const call = await json(await send('tools/call', { name: 'echo', arguments: { message: 'hi' } }));
  assert.deepEqual(call.result, { content: [{ type: 'text', text: '{"message":"hi"}' }], structuredContent: { message: 'hi' }, resultType: 'complete', _meta: SERVER_INFO });
  const resources = await json(await send('resources/list'));
  assert.deepEqual([resources.result.resultType, resources.result.ttlMs, resources.result.cacheScope], ['complete', 300000, 'public']);
  const read = await json(await send('resources/read', { uri: 'test://watched' }));
  assert.deepEqual([read.result.resultType, read.result.ttlMs, read.result.cacheScope], ['complete', 300000, 'public']);
  // 2026-07-28 answers an unknown resource with -32602 (earlier revisions: -32002).
  const missing = await json(await send('resources/read', { uri: 'test://none' }), 400);
  assert.equal(missing.error.code, -32602);
});

test('an upstream asking for input becomes an InputRequiredResult; the retry with answers and the signed state completes it', async () => {
  const elicit = { ...META, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const ask = { name: 'ask_name', arguments: { topic: 'tides' } };
  const first = await json(await send('tools/call', ask, { id: 1, meta: elicit }));
  assert.equal(first.result.resultType, 'input_required');
  assert.deepEqual(first.result.inputRequests, {
    input: { method: 'elicitation/create', params: { message: 'Who is asking about tides?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } },
  });
  const state = first.result.requestState;
  assert.equal(typeof state, 'string');
  const answer = { input: { action: 'accept', content: { name: 'Ada' } } };
  const done = await json(await send('tools/call', { ...ask, inputResponses: answer, requestState: state }, { id: 2, meta: elicit }));
  assert.equal(done.result.resultType, 'complete');
  assert.equal(done.result.content[0].text, 'Hello Ada (accept), about tides; arguments: {"topic":"tides"}');
  // No answer yet: the same question again, not an error.
  const again = await json(await send('tools/call', { ...ask, requestState: state }, { id: 3, meta: elicit }));
  assert.deepEqual([again.result.resultType, again.result.inputRequests, again.result.requestState], ['input_required', first.result.inputRequests, state]);
  // Altered state, or state presented for other arguments, fails its check.
  const tampered = state.slice(0, 10) + (state[10] === 'A' ? 'B' : 'A') + state.slice(11);
  for (const [why, params] of [['tampered', { ...ask, inputResponses: answer, requestState: tampered }], ['other arguments', { name: 'ask_name', arguments: { topic: 'moons' }, inputResponses: answer, requestState: state }]]) {
    const refused = await json(await send('tools/call', params, { id: 4, meta: elicit }), 400);
    assert.equal(refused.error.code, -32602, why);
  }
  // A client that did not declare elicitation is told what it lacks.
  const lacking = await json(await send('tools/call', ask, { id: 5 }), 400);
  assert.deepEqual(lacking.error, { code: -32021, message: 'Missing required client capability: elicitation', data: { requiredCapabilities: { elicitation: {} } } });
});

test('subscriptions/listen: acknowledgement first, then resource updates tagged with the subscription id', async () => {
  const controller = new AbortController();
  const res = await fetch(server.mcpUrl, {
    method: 'POST',
    signal: controller.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': 'subscriptions/listen' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true, resourceSubscriptions: ['test://watched', 'test://unknown'] }, _meta: META } }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const events = sseEvents(res);
  const ack = JSON.parse((await events.next()).value.data);
  assert.deepEqual(ack, {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { resourceSubscriptions: ['test://watched'] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } },
  });
  const notify = () => fetch(new URL('/notify', server.url), { method: 'POST', headers: { authorization: `Bearer ${NOTIFY_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ uri: 'test://watched' }) });
  const sent = await notify();
  assert.deepEqual(await sent.json(), { subscribers: 1, delivered: 1 });
  const update = JSON.parse((await events.next()).value.data);
  assert.deepEqual(update, { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'test://watched', _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } } });
  controller.abort();
  // The object notices the client left at its next keepalive and unsubscribes.
  let after = 1;
  for (let i = 0; i < 40 && after; i++) {
    await new Promise((r) => setTimeout(r, 250));
    after = (await (await notify()).json()).subscribers;
  }
  assert.equal(after, 0, 'the subscription ended with its stream');
});

test('a session-based client and a 2026-07-28 client use the same server side by side', async () => {
  const sid = await openSession(server.mcpUrl, '2025-11-25');
  const legacy = (message, id) => post(server.mcpUrl, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } }, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' });
  const [a, b, c] = await Promise.all([legacy('one', 1), send('tools/call', { name: 'echo', arguments: { message: 'two' } }), legacy('three', 2)]);
  const [ra, rb, rc] = [await json(a), await json(b), await json(c)];
  assert.deepEqual([ra.result.content[0].text, rb.result.content[0].text, rc.result.content[0].text], ['{"message":"one"}', '{"message":"two"}', '{"message":"three"}']);
  // Only the 2026-07-28 result carries the revision's fields.
  assert.deepEqual([ra.result.resultType, rb.result.resultType], [undefined, 'complete']);
  // 2025 keeps what 2026-07-28 removed: ping, logging/setLevel, resources/subscribe, DELETE.
  for (const [method, params] of [['ping', {}], ['logging/setLevel', { level: 'info' }], ['resources/subscribe', { uri: 'test://watched' }]]) {
    const body = await json(await post(server.mcpUrl, { jsonrpc: '2.0', id: 9, method, params }, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }));
    assert.deepEqual(body.result, {}, method);
  }
  const missing = await json(await post(server.mcpUrl, { jsonrpc: '2.0', id: 10, method: 'resources/read', params: { uri: 'test://none' } }, { 'mcp-session-id': sid }));
  assert.equal(missing.error.code, -32002);
  const end = await fetch(server.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
  assert.equal(end.status, 200);
});
