// Tools as fetch calls, done properly (issue 5): templates in every location and body modes,
// JSON Schema validation, reply mapping (pick, outputSchema, binary, size caps), retries,
// redirects, the whole-call time budget, and cancellation, against a real upstream.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { startServer, post, openSession, sseEvents, API_KEY } from './harness.mjs';

let server;
let url;
let sid;
before(async () => {
  server = await startServer();
  url = new URL('/tools/mcp', server.url);
  sid = await openSession(url);
});
after(() => server.close());

let nextId = 1;
async function call(name, args = {}, { meta, session = sid } = {}) {
  const params = { name, arguments: args, ...(meta ? { _meta: meta } : {}) };
  const res = await post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params }, { 'mcp-session-id': session });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.ok(body.result, JSON.stringify(body));
  return body.result;
}

const text = (result) => result.content[0].text;
const error = (message) => ({ content: [{ type: 'text', text: message }], isError: true });

test('form and bodyless POSTs', async () => {
  const form = await call('form_hook', { name: 'Ann Lee', tags: ['a', 'b&c'], age: 30 });
  assert.equal(form.structuredContent.body, 'name=Ann+Lee&tags=a&tags=b%26c&age=30');
  assert.deepEqual(form.structuredContent.headers, { 'content-type': 'application/x-www-form-urlencoded' });
  const none = await call('ping_none', { name: 'x y' });
  assert.deepEqual(none.structuredContent, { method: 'POST', path: '/mirror/none', query: '?name=x%20y', headers: {}, body: '' });
});

test('values are encoded for the path, the query, a header and JSON; _meta values and secrets fill templates', async () => {
  const args = { id: 'a/b c', q: 'x&y=z', name: 'Zoë "Z"', count: 3 };
  const { structuredContent: seen } = await call('templated', args, { meta: { traceId: 't-9' } });
  assert.equal(seen.method, 'PUT');
  assert.equal(seen.path, '/mirror/items/a%2Fb%20c');
  assert.equal(seen.query, '?q=x%26y%3Dz');
  assert.deepEqual(seen.headers, { 'content-type': 'application/json', 'x-name': 'Zo%C3%AB "Z"', 'x-trace': 't-9' });
  // The secret reached the upstream; its echo is redacted on the way back.
  assert.equal(seen.body, JSON.stringify({ name: 'Zoë "Z"', count: 3, label: '#3 of Zoë "Z"', trace: 't-9', key: '[redacted]' }));
  assert.ok(!JSON.stringify(seen).includes(API_KEY));
  // Without the _meta value its member is left out and its header is empty: only a header made
  // of arguments is optional.
  const { structuredContent: bare } = await call('templated', { id: '1', name: 'n', count: 1 });
  assert.equal(bare.headers['x-trace'], '');
  assert.equal(JSON.parse(bare.body).trace, undefined);
});

test('OpenAPI query styles and names, cookies and an optional header reach the upstream byte for byte', async () => {
  const args = {
    perPage: 25,
    top: 5,
    filter: { status: 'open', 'owner id': 'a&b' },
    color: ['blue', 'black', 'brown'],
    point: { R: 100, G: 200, B: 150 },
    status: 'in progress',
    next: 'https://example.com/a?b=c d',
    theme: 'dark; "x"',
  };
  const { structuredContent: seen } = await call('openapi_params', args);
  const query = '?fixed=1&per-page=25&%24top=5&filter[status]=open&filter[owner%20id]=a%26b&color=blue|black|brown'
    + '&colors=blue%20black%20brown&tag=blue&tag=black&tag=brown&point=R,100,G,200,B,150&filter%5Bstatus%5D=in%20progress'
    + '&next=https://example.com/a?b%3Dc%20d';
  assert.equal(seen.query, query);
  // The secret reached the upstream as the session cookie; its echo is redacted on the way back.
  const cookie = 'session=[redacted]; theme=dark%3B%20%22x%22; colors=blue,black,brown';
  assert.deepEqual(seen.headers, { 'x-name': 'https://example.com/a?b=c d', cookie });
  const raw = server.upstream.seen.findLast((r) => r.url.startsWith('/mirror/params'));
  assert.equal(raw.url, `/mirror/params${query}`);
  assert.equal(raw.headers.cookie, cookie.replace('[redacted]', API_KEY));
  // No argument: the parameters, cookies and header made of arguments are left out (the
  // mirror echoes only the headers it was sent).
  const bare = (await call('openapi_params', {})).structuredContent;
  assert.deepEqual([bare.query, bare.headers], ['?fixed=1', { cookie: 'session=[redacted]' }]);
  // null, an empty array and an empty object are no value either; 0 and '' are values.
  const empty = (await call('openapi_params', { next: null, color: [], filter: {}, top: 0, status: '' })).structuredContent;
  assert.deepEqual([empty.query, empty.headers], ['?fixed=1&%24top=0&filter%5Bstatus%5D=', { cookie: 'session=[redacted]' }]);
});

test('arguments are validated with the keywords real tools use; errors name the path and the rule', async () => {
  const order = {
    sku: 'ABC-1234',
    items: [{ name: 'pen', price: 1.5 }, { name: 'ink', price: 3 }],
    contact: { email: 'ann@example.com' },
    deliverBy: '2026-12-01T09:00:00+01:00',
    callback: 'https://example.com/done',
    priority: 2,
  };
  assert.equal(JSON.parse((await call('place_order', order)).structuredContent.body).sku, 'ABC-1234');
  const cases = [
    [{ sku: 'abc-1234' }, '/sku: must match the pattern "^[A-Z]{3}-[0-9]{4}$" (pattern)'],
    [{ items: [{ name: 'pen', price: 1 }, { name: 'ink', price: 0 }] }, '/items/1/price: must be greater than 0 (exclusiveMinimum)'],
    [{ items: [] }, '/items: must have at least 1 items (minItems)'],
    [{ items: [{ name: '', price: 1 }] }, '/items/0/name: must have at least 1 characters (minLength)'],
    [{ contact: { email: 'nope' } }, '/contact: matches none of the alternatives: 1) /email: must be a valid email (format); 2) missing required property "phone" (required) (oneOf)'],
    [{ contact: { phone: '+4712345678' } }, null],
    [{ deliverBy: '2026-12-01 09:00' }, '/deliverBy: must be a valid date-time (format)'],
    [{ callback: 'not a uri' }, '/callback: must be a valid uri (format)'],
    [{ priority: 9 }, '/priority: matches none of the alternatives: 1) must be "normal" (const); 2) must be at most 5 (maximum) (anyOf)'],
    [{ coupon: 'X' }, 'unknown property "coupon" (additionalProperties)'],
  ];
  for (const [change, message] of cases) {
    const result = await call('place_order', { ...order, ...change });
    if (message === null) assert.equal(result.isError, undefined, text(result));
    else assert.deepEqual(result, error(`invalid arguments for tool "place_order": ${message}`));
  }
  // Before 2025-11-25 the same fault is a -32602 protocol error.
  const old = await openSession(url, '2025-06-18');
  const res = await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'place_order', arguments: { ...order, sku: 'x' } } }, { 'mcp-session-id': old });
  assert.deepEqual((await res.json()).error, { code: -32602, message: 'Invalid params: invalid arguments for tool "place_order": /sku: must match the pattern "^[A-Z]{3}-[0-9]{4}$" (pattern)' });
});

test('response.pick takes the part of an n8n-style reply that matters', async () => {
  const body = JSON.stringify({ data: { result: { city: 'Oslo', temp: 3 } }, executionId: 'e1' });
  assert.deepEqual(await call('wrapped', { body }), { content: [{ type: 'text', text: '{"city":"Oslo","temp":3}' }], structuredContent: { city: 'Oslo', temp: 3 } });
  const missing = await call('wrapped', { body: '{"data":{}}' });
  assert.deepEqual(missing, error('The upstream reply has nothing at /data/result (response.pick): {"data":{}}'));
});

test('outputSchema: tools/list declares it, and a result that breaks it is an isError result', async () => {
  const list = await (await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': sid })).json();
  const shaped = list.result.tools.find((t) => t.name === 'shaped');
  assert.deepEqual(shaped.outputSchema, { type: 'object', required: ['temp'], properties: { temp: { type: 'number' }, unit: { enum: ['c', 'f'] } } });
  assert.deepEqual((await call('shaped', { body: '{"temp":21.5,"unit":"c"}' })).structuredContent, { temp: 21.5, unit: 'c' });
  assert.deepEqual(await call('shaped', { body: '{"temp":"hot"}' }), error("The upstream reply does not fit: the structured result breaks the tool's outputSchema at /temp: expected number, got string (type)."));
  assert.deepEqual(await call('shaped', { body: '{"temp":1,"unit":"k"}' }), error('The upstream reply does not fit: the structured result breaks the tool\'s outputSchema at /unit: must be one of "c", "f" (enum).'));
  assert.deepEqual(await call('shaped', { body: '[1]' }), error('The upstream reply does not fit: the tool declares an outputSchema, but the reply has no structured (JSON object) result.'));
  // The whole-result mode is validated the same way.
  const good = { content: [{ type: 'text', text: 'ok' }], structuredContent: { temp: 1 } };
  assert.deepEqual(await call('shaped_passthrough', { body: JSON.stringify(good) }), good);
  const bad = { content: [{ type: 'text', text: 'ok' }], structuredContent: { temp: 'x' } };
  assert.equal(text(await call('shaped_passthrough', { body: JSON.stringify(bad) })), "The upstream reply does not fit: the structured result breaks the tool's outputSchema at /temp: expected number, got string (type).");
});

test('images and audio become their content; other binary an embedded resource', async () => {
  const image = await call('image');
  assert.deepEqual(image, { content: [{ type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' }] });
  const audio = await call('audio');
  assert.deepEqual(audio, { content: [{ type: 'audio', mimeType: 'audio/wav', data: Buffer.from('RIFF$\0\0\0WAVEfmt ', 'latin1').toString('base64') }] });
  const pdf = await call('pdf');
  assert.deepEqual(pdf, { content: [{ type: 'resource', resource: { uri: 'mcp-edge://tools/pdf/reply', mimeType: 'application/pdf', blob: Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1').toString('base64') } }] });
});

test('a 50 MB reply is refused or truncated at the cap, and the rest is never read', async () => {
  assert.deepEqual(await call('big', { key: 'refused' }), error('The upstream reply (HTTP 200, text/plain) exceeds the 65536-byte limit.'));
  const cut = await call('big_truncated', { key: 'cut' });
  assert.equal(text(cut), `${'a'.repeat(1000)}\n\n[mcp-edge: the reply was truncated at 1000 bytes]`);
  for (const key of ['refused', 'cut']) {
    const stats = server.upstream.big.get(key);
    while (!stats.closed && stats.written < 50 * 1024 * 1024) await new Promise((r) => setTimeout(r, 20));
    assert.ok(stats.closed, `${key}: the worker read the whole 50 MB`);
    assert.ok(stats.written < 10 * 1024 * 1024, `${key}: ${stats.written} bytes written before the worker hung up`);
  }
});

test('retries: idempotent tools retry 503 with backoff; other tools do not', async () => {
  assert.deepEqual((await call('flaky', { key: 'g1', fails: 2 })).structuredContent, { attempts: 3 });
  assert.deepEqual(await call('flaky', { key: 'g2', fails: 5 }), error('The upstream answered HTTP 503 (text/plain): busy (attempt 3)'));
  assert.deepEqual(await call('flaky_post', { key: 'p1', fails: 1 }), error('The upstream answered HTTP 503 (text/plain): busy (attempt 1)'));
  assert.equal(server.upstream.attempts.get('p1'), 1);
  assert.deepEqual((await call('flaky_idempotent_post', { key: 'p2', fails: 1 })).structuredContent, { attempts: 2 });
});

test('Retry-After is honoured, and one past the time budget ends the call at once', async () => {
  let start = Date.now();
  assert.deepEqual((await call('busy', { key: 'r1', after: 1 })).structuredContent, { attempts: 2 });
  assert.ok(Date.now() - start >= 1000, `retried after ${Date.now() - start} ms, before Retry-After`);
  start = Date.now();
  assert.deepEqual(await call('busy', { key: 'r2', after: 10 }), error('The upstream request failed: the upstream asked to retry after 10000 ms, which is past the call\'s 3000 ms time limit'));
  assert.ok(Date.now() - start < 2500, 'the call waited instead of ending');
  assert.equal(server.upstream.attempts.get('r2'), 1);
});

test('timeoutMs bounds the whole call, retries included', async () => {
  const start = Date.now();
  const result = await call('budget', { key: 'b1' });
  const elapsed = Date.now() - start;
  assert.equal(result.isError, true);
  assert.match(text(result), /^The upstream answered HTTP 503 \(text\/plain\): busy \(attempt \d\)$|^The upstream did not answer within 1000 ms\.$/);
  assert.ok(elapsed < 1600, `the call took ${elapsed} ms with a 1000 ms budget`);
  assert.ok(server.upstream.attempts.get('b1') >= 3, `only ${server.upstream.attempts.get('b1')} attempts`);
});

test('redirects are followed up to maxRedirects, only to the same origin or a listed host', async () => {
  const port = new URL(server.upstream.url).port;
  assert.equal((await call('redirect', { to: '/mirror/moved' })).structuredContent.path, '/mirror/moved');
  assert.equal((await call('redirect', { to: `http://localhost:${port}/mirror/listed` })).structuredContent.path, '/mirror/listed');
  const other = createServer((req, res) => res.end('should never be reached')).listen(0, '127.0.0.1');
  await new Promise((r) => other.once('listening', r));
  try {
    const elsewhere = `http://127.0.0.1:${other.address().port}/`;
    assert.deepEqual(await call('redirect', { to: elsewhere }), error('The upstream request failed: the redirect to host "127.0.0.1" is not allowed (add it to http.redirectHosts)'));
  } finally {
    other.close();
  }
  const chain = `/redirect?to=${encodeURIComponent('/redirect?to=/mirror/x')}`;
  assert.deepEqual(await call('redirect', { to: chain }), error('The upstream request failed: more than 2 redirects'));
  assert.deepEqual(await call('no_redirects', { to: '/mirror/x' }), error('The upstream answered HTTP 302 (no content type): (empty body)'));
});

async function cancelWhileHanging(key, accept) {
  const id = nextId++;
  const pending = fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hang', arguments: { key } } }),
  });
  while (!server.upstream.hanging.has(key)) await new Promise((r) => setTimeout(r, 10));
  // The cancellation arrives in a request of its own.
  const cancel = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'user' } }, { 'mcp-session-id': sid });
  assert.equal(cancel.status, 202);
  const res = await pending;
  while (!server.upstream.aborted.has(key)) await new Promise((r) => setTimeout(r, 10));
  return { res, id };
}

test('notifications/cancelled aborts the upstream fetch, and no reply is sent', async () => {
  // JSON only, and JSON-or-SSE: the POST ends with 202 and no body.
  for (const [key, accept] of [['c-json', 'application/json'], ['c-lazy', 'application/json, text/event-stream']]) {
    const { res } = await cancelWhileHanging(key, accept);
    assert.equal(res.status, 202, key);
    assert.equal(await res.text(), '', key);
  }
  // SSE: the stream ends without a response for the call.
  const { res, id } = await cancelWhileHanging('c-sse', 'text/event-stream');
  assert.equal(res.status, 200);
  const events = [];
  for await (const event of sseEvents(res)) events.push(event);
  assert.ok(events.every((e) => !e.data || JSON.parse(e.data).id !== id), JSON.stringify(events));
  // The session goes on.
  assert.deepEqual((await call('shaped', { body: '{"temp":1}' })).structuredContent, { temp: 1 });
});

test('the SSRF guard refuses private and metadata addresses, however they are written or reached', async () => {
  assert.deepEqual(await call('metadata'), error("The upstream request failed: the upstream host 169.254.169.254 is a link-local or metadata address; list it in the server's privateUpstreams to allow it"));
  // 2130706433 is 127.0.0.1, which the allowlist names: hosts compare as parsed, so it is the
  // same host (and tests/e2e/urls.test.mjs refuses every spelling that is not).
  // The upstream is reached (its /echo takes POSTs only), as 127.0.0.1.
  assert.deepEqual(await call('encoded_loopback'), error('The upstream answered HTTP 404 (application/json): {"error":"no route GET /echo"}'));
  assert.deepEqual([server.upstream.seen.at(-1).url, server.upstream.seen.at(-1).headers.host], ['/echo', `127.0.0.1:${new URL(server.upstream.url).port}`]);
  // Redirects are rechecked: a redirect host allowed by redirectHosts is still private.
  assert.deepEqual(await call('redirect_private', { to: 'http://10.0.0.1/admin' }), error("The upstream request failed: the upstream host 10.0.0.1 is a private address; list it in the server's privateUpstreams to allow it"));
  assert.deepEqual(await call('redirect_private', { to: 'http://169.254.169.254/latest' }), error("The upstream request failed: the upstream host 169.254.169.254 is a link-local or metadata address; list it in the server's privateUpstreams to allow it"));
});
