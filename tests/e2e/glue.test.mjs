// The Worker's own JavaScript (src/edge/glue.js), under Node: what each function hands the wasm
// side. In particular, state stored by earlier builds (serde-wasm-bindgen's objects, with a `Map`
// for each JSON object and `undefined` for JSON null) reads as the JSON the Rust side parses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './harness.mjs';

const glue = await import(pathToFileURL(join(root, 'src', 'edge', 'glue.js')).href);

test('answer_headers: a session JSON answer, a stream without a session, and nothing empty', () => {
  const entries = (h) => [...h.entries()];
  assert.deepEqual(entries(glue.answer_headers('application/json', false, 'sid-1')), [['content-type', 'application/json'], ['mcp-session-id', 'sid-1']]);
  assert.deepEqual(entries(glue.answer_headers('text/event-stream', true, '')), [['cache-control', 'no-cache'], ['content-type', 'text/event-stream'], ['x-accel-buffering', 'no']]);
  assert.deepEqual(entries(glue.answer_headers('', false, 'sid-2')), [['mcp-session-id', 'sid-2']]);
});

test('request_init: the headers as a plain list of pairs, redirects manual, the signal, a body only when given', () => {
  const signal = new AbortController().signal;
  assert.deepEqual(glue.request_init('POST', 'content-type\napplication/json\nx-empty\n\nauthorization\nBearer t', '{"a":1}', signal), {
    method: 'POST',
    headers: [['content-type', 'application/json'], ['x-empty', ''], ['authorization', 'Bearer t']],
    redirect: 'manual',
    signal,
    body: '{"a":1}',
  });
  const bare = glue.request_init('GET', '', undefined, signal);
  assert.deepEqual(bare, { method: 'GET', headers: [], redirect: 'manual', signal });
  assert.equal('body' in bare, false);
  // What fetch makes of it: the list, in order, as the request's headers.
  const request = new Request('http://127.0.0.1/', glue.request_init('POST', 'x-a\n1\nx-b\n2', 'b', signal));
  assert.deepEqual([...request.headers.entries()], [['content-type', 'text/plain;charset=UTF-8'], ['x-a', '1'], ['x-b', '2']]);
  assert.equal(request.redirect, 'manual');
});

test('json_text: text stays text, nothing stays nothing', () => {
  assert.equal(glue.json_text('{"a":1}'), '{"a":1}');
  assert.equal(glue.json_text(undefined), undefined);
  assert.equal(glue.json_text(null), undefined);
});

test('json_text: a session stored by an earlier build reads as its JSON', () => {
  const stored = {
    schema: 1,
    id: 'abc',
    server: '/mcp',
    principal: 'anonymous',
    protocolVersion: '2025-06-18',
    clientInfo: new Map([['name', 'n8n'], ['version', '1.0']]),
    clientCapabilities: new Map([['roots', new Map([['listChanged', true]])], ['sampling', new Map()]]),
    createdMs: 1763800000000,
    lastUsedMs: 1763800001000,
    streamsOpened: 2,
    subscriptions: ['test://a'],
    listenId: undefined,
  };
  assert.deepEqual(JSON.parse(glue.json_text(stored)), {
    schema: 1,
    id: 'abc',
    server: '/mcp',
    principal: 'anonymous',
    protocolVersion: '2025-06-18',
    clientInfo: { name: 'n8n', version: '1.0' },
    clientCapabilities: { roots: { listChanged: true }, sampling: {} },
    createdMs: 1763800000000,
    lastUsedMs: 1763800001000,
    streamsOpened: 2,
    subscriptions: ['test://a'],
  });
});

test('request_head: method, URL, then each header name and value, one per line', () => {
  const request = { method: 'POST', url: 'https://h/mcp', headers: new Headers({ Accept: 'application/json', 'Mcp-Session-Id': 's1' }) };
  assert.equal(glue.request_head(request), 'POST\nhttps://h/mcp\naccept\napplication/json\nmcp-session-id\ns1');
});

test('reply_head: content type and length, each empty when absent, and the size of all headers', () => {
  assert.equal(glue.reply_head(new Response('{}', { headers: { 'content-type': 'application/json', 'content-length': '2' } })), 'application/json\n2\n43');
  assert.equal(glue.reply_head({ headers: new Headers() }), '\n\n0');
  assert.equal(glue.reply_head({ headers: new Headers({ 'x-filler': 'f'.repeat(1000) }) }), '\n\n1008');
});

test('rate_limit and queue_send call their bindings as the runtime defines them', async () => {
  const keys = [];
  const limiter = { limit: async ({ key }) => (keys.push(key), { success: key !== 'over' }) };
  assert.deepEqual([await glue.rate_limit(limiter, 'a'), await glue.rate_limit(limiter, 'over')], [true, false]);
  assert.deepEqual(keys, ['a', 'over']);
  const sent = [];
  await glue.queue_send({ send: async (body) => sent.push(body) }, '{"call":"c1"}');
  assert.deepEqual(sent, ['{"call":"c1"}']);
});

test('pbkdf2: Web Crypto derives what Node derives (RFC 8018 PBKDF2-HMAC-SHA256)', async () => {
  const { pbkdf2Sync } = await import('node:crypto');
  const salt = new TextEncoder().encode('mcp-edge user alice');
  const derived = await glue.pbkdf2('correct horse battery staple', salt, 1000);
  assert.equal(Buffer.from(derived).toString('hex'), pbkdf2Sync('correct horse battery staple', Buffer.from(salt), 1000, 32, 'sha256').toString('hex'));
  assert.notEqual(Buffer.from(await glue.pbkdf2('correct horse battery stapler', salt, 1000)).toString('hex'), Buffer.from(derived).toString('hex'));
});

/** A Durable Object's storage as the runtime's API behaves, over a Map (list sorted by key). */
function fakeStorage() {
  const m = new Map();
  return {
    m,
    async get(k) { return m.get(k); },
    async put(k, v) {
      if (typeof k === 'object') for (const [a, b] of Object.entries(k)) m.set(a, b);
      else m.set(k, v);
    },
    async delete(k) { for (const x of [].concat(k)) m.delete(x); },
    async list({ prefix = '', limit = Infinity, reverse = false, end } = {}) {
      const keys = [...m.keys()].filter((k) => k.startsWith(prefix) && (end === undefined || k < end)).sort();
      if (reverse) keys.reverse();
      return new Map(keys.slice(0, limit).map((k) => [k, m.get(k)]));
    },
  };
}

test('pins: read, stored in one call, held, and decided only for the fingerprint the admin saw', async () => {
  const s = fakeStorage();
  assert.deepEqual(JSON.parse(await glue.pins_read(s, 'up')), { seen: false, pins: {}, held: {}, rejected: {} });
  const pin = (fingerprint, description) => JSON.stringify({ fingerprint, definition: { name: 'echo', description }, atMs: 1 });
  const puts = { 'pin:up\necho': pin('aa', 'old'), 'held:up\necho': pin('bb', 'new'), 'seen:up': '1' };
  for (let i = 0; i < 300; i++) puts[`pin:other\nt${i}`] = pin('cc', 'x');
  await glue.store_all(s, JSON.stringify(puts));
  assert.equal(s.m.size, 303);
  const read = JSON.parse(await glue.pins_read(s, 'up'));
  assert.equal(read.seen, true);
  assert.deepEqual(Object.keys(read.pins), ['echo']);
  assert.deepEqual(read.held, { echo: 'bb' });
  const about = JSON.stringify({ server: 'gateway', mode: 'hold', prefixes: { up: 'up_' } });
  assert.deepEqual(JSON.parse(await glue.pins_held(s, about)), [{ server: 'gateway', mode: 'hold', upstream: 'up', tool: 'echo', name: 'up_echo', fingerprint: 'bb', atMs: 1, fields: ['description'], old: { name: 'echo', description: 'old' }, new: { name: 'echo', description: 'new' } }]);
  assert.deepEqual(glue.pins_changed(null, { name: 'a', inputSchema: {} }), ['name', 'inputSchema']);
  assert.equal(await glue.pins_decide(s, 'up\necho', 'forged', true), undefined);
  assert.equal(await glue.pins_decide(s, 'up\nnothing', 'bb', true), undefined);
  assert.deepEqual(JSON.parse(await glue.pins_decide(s, 'up\necho', 'bb', false)), { old: { name: 'echo', description: 'old' }, new: { name: 'echo', description: 'new' }, fields: 'description' });
  assert.deepEqual(JSON.parse(await glue.pins_read(s, 'up')).rejected, { echo: 'bb' });
  assert.equal(await glue.pins_decide(s, 'up\necho', 'bb', true), undefined, 'decided once');
  await s.put('held:up\necho', pin('dd', 'newer'));
  await glue.pins_decide(s, 'up\necho', 'dd', true);
  const after = JSON.parse(await glue.pins_read(s, 'up'));
  assert.equal(after.pins.echo.fingerprint, 'dd');
  assert.deepEqual([after.held, after.rejected], [{}, {}]);
});

test('audit: kept up to a cap, read newest first a page at a time', async () => {
  const s = fakeStorage();
  for (let i = 0; i < 30; i++) await glue.audit_append(s, `a:${String(i).padStart(15, '0')}:n`, JSON.stringify({ i }), 20, 5);
  const kept = [...s.m.keys()].filter((k) => k.startsWith('a:'));
  assert.ok(kept.length <= 25 && kept.length >= 20, `${kept.length}`);
  assert.equal(s.m.get('count'), kept.length);
  const first = JSON.parse(await glue.audit_page(s, 3, ''));
  assert.deepEqual(first.entries, [{ i: 29 }, { i: 28 }, { i: 27 }]);
  const second = JSON.parse(await glue.audit_page(s, 3, first.next));
  assert.deepEqual(second.entries, [{ i: 26 }, { i: 25 }, { i: 24 }]);
  const last = JSON.parse(await glue.audit_page(s, 100, ''));
  assert.equal(last.next, null);
});
