// The Worker's own JavaScript (src/edge/glue.js), under Node: what each function hands the wasm
// side. In particular, state stored by earlier builds (serde-wasm-bindgen's objects, with a `Map`
// for each JSON object and `undefined` for JSON null) reads as the JSON the Rust side parses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './harness.mjs';

const glue = await import(pathToFileURL(join(root, 'src', 'edge', 'glue.js')).href);

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
