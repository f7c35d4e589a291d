// OpenAPI header parameters as SEP-2243 `Mcp-Param-*` headers, end to end: the import marks
// them `x-mcp-header` (under the document's header name, whatever the argument is called), a
// 2026-07-28 client that mirrors them gets its call through to Prism with the original headers
// (Prism validates them against the document), and a missing or different mirror is 400 -32020.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importCommand, serve, startPrism } from './harness.mjs';

const VERSION = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientInfo': { name: 'headers-e2e', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

const header = (name, schema, required = false) => ({ name, in: 'header', required, schema });
const DOC = {
  openapi: '3.0.3',
  info: { title: 'Regions', version: '1' },
  servers: [{ url: 'https://regions.example.com' }],
  paths: {
    '/items/{id}': {
      get: {
        operationId: 'getItem',
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          header('X-Region', { type: 'string', enum: ['eu', 'us'] }, true),
          header('id', { type: 'string' }),
          header('X-Depth', { type: 'integer', minimum: 0, maximum: 9 }),
          header('X-Dry-Run', { type: 'boolean' }),
          header('X-Ratio', { type: 'number' }),
          header('X-Auth-Token', { type: 'string' }),
          // Prism 5.12 fails on an absent optional list header: the calls always send it.
          header('X-Tags', { type: 'array', items: { type: 'string' } }),
        ],
        responses: { 200: { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { id: { type: 'string' } } } } } } },
      },
    },
  },
};

let prism;
let server;
let tool;
before(async () => {
  const folder = mkdtempSync(join(tmpdir(), 'mcp-edge-headers-'));
  const document = join(folder, 'regions.json');
  writeFileSync(document, JSON.stringify(DOC));
  prism = await startPrism(document);
  const { config, parsed } = importCommand(document, ['--base-url', prism.url, '--server', 'regions']);
  [tool] = parsed.servers[0].tools;
  server = await serve(config, parsed);
});
after(async () => {
  await server?.stop();
  await prism?.stop();
});

/** A 2026-07-28 request, with the headers the revision requires plus `headers`. */
function send(method, params, headers = {}) {
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': method };
  if (params.name) base['mcp-name'] = params.name;
  return fetch(server.mcp, { method: 'POST', headers: { ...base, ...headers }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } }) });
}

test('the import marks the header parameters a 2026-07-28 client may mirror, by their header names', () => {
  const marked = Object.fromEntries(Object.entries(tool.inputSchema.properties).filter(([, s]) => s['x-mcp-header']).map(([k, s]) => [k, s['x-mcp-header']]));
  // The path's `id` keeps its name; the header `id` is the argument id_header, mirrored as Mcp-Param-id.
  assert.deepEqual(marked, { X_Region: 'X-Region', id_header: 'id', X_Depth: 'X-Depth', X_Dry_Run: 'X-Dry-Run' });
  // Not marked: a number (the spec allows string, integer and boolean), a credential, a list.
  for (const k of ['X_Ratio', 'X_Auth_Token', 'X_Tags']) assert.equal(tool.inputSchema.properties[k]['x-mcp-header'], undefined, k);
  assert.deepEqual(tool.http.headers, { 'X-Region': '{X_Region}', id: '{id_header}', 'X-Depth': '{X_Depth}', 'X-Dry-Run': '{X_Dry_Run}', 'X-Ratio': '{X_Ratio}', 'X-Auth-Token': '{X_Auth_Token}', 'X-Tags': '{X_Tags}' });
});

test('tools/list gives the marks to 2026-07-28 clients as written', async () => {
  const res = await send('tools/list', {});
  assert.equal(res.status, 200);
  const { result } = await res.json();
  assert.deepEqual(result.tools[0].inputSchema.properties.id_header, tool.inputSchema.properties.id_header);
  assert.equal(result.tools[0].inputSchema.properties.X_Region['x-mcp-header'], 'X-Region');
});

test('mirrored as Mcp-Param-*, the arguments reach the API as the document\'s headers; Prism finds no fault', async () => {
  const args = { id: 'a1', X_Region: 'eu', id_header: 'h-7', X_Depth: 3, X_Dry_Run: true, X_Ratio: 0.5, X_Tags: ['a', 'b'] };
  const before = prism.requests.length;
  const res = await send('tools/call', { name: 'getItem', arguments: args }, {
    'mcp-param-x-region': 'eu',
    'Mcp-Param-id': 'h-7',
    'Mcp-Param-X-Depth': '3',
    'Mcp-Param-X-Dry-Run': 'true',
  });
  assert.equal(res.status, 200, await res.clone().text());
  const { result, error } = await res.json();
  assert.equal(error, undefined);
  assert.equal(result.isError, undefined, JSON.stringify([result, prism.requests.slice(before)]));
  const [seen] = prism.requests.slice(before);
  assert.equal(seen.url, '/items/a1');
  assert.equal(seen.headers['x-region'], 'eu');
  assert.equal(seen.headers.id, 'h-7');
  assert.equal(seen.headers['x-depth'], '3');
  assert.equal(seen.headers['x-dry-run'], 'true');
  assert.equal(seen.headers['x-ratio'], '0.5');
  assert.equal(seen.headers['x-tags'], 'a,b');
  assert.deepEqual(seen.violations.filter((v) => v.severity === 'Error'), []);
  // Mcp-Param-* headers are the client's to the edge, never sent on to the API.
  assert.equal(Object.keys(seen.headers).some((h) => h.startsWith('mcp-')), false);
  // An optional header argument left out has no mirror, and the call still goes through.
  const plain = await send('tools/call', { name: 'getItem', arguments: { id: 'a2', X_Region: 'us', X_Tags: ['a'] } }, { 'Mcp-Param-X-Region': 'us' });
  assert.equal(plain.status, 200);
  assert.equal((await plain.json()).result.isError, undefined);
  // A value the header cannot carry as plain text comes in the Base64 sentinel.
  const encoded = await send('tools/call', { name: 'getItem', arguments: { id: 'a3', X_Region: 'eu', id_header: 'zürich', X_Tags: ['a'] } }, { 'Mcp-Param-X-Region': 'eu', 'Mcp-Param-id': `=?base64?${Buffer.from('zürich').toString('base64')}?=` });
  assert.equal(encoded.status, 200);
});

test('a missing, different or extra Mcp-Param-* header is 400 -32020, and nothing reaches the API', async () => {
  const args = { id: 'a1', X_Region: 'eu', id_header: 'h-7' };
  const before = prism.requests.length;
  const cases = [
    ['missing', { 'Mcp-Param-X-Region': 'eu' }],
    ['different', { 'Mcp-Param-X-Region': 'us', 'Mcp-Param-id': 'h-7' }],
    ['renamed argument mirrored under its argument name', { 'Mcp-Param-X-Region': 'eu', 'Mcp-Param-id_header': 'h-7' }],
  ];
  for (const [what, headers] of cases) {
    const res = await send('tools/call', { name: 'getItem', arguments: args }, headers);
    assert.equal(res.status, 400, what);
    const { error } = await res.json();
    assert.equal(error.code, -32020, what);
  }
  const extra = await send('tools/call', { name: 'getItem', arguments: { id: 'a1', X_Region: 'eu' } }, { 'Mcp-Param-X-Region': 'eu', 'Mcp-Param-X-Depth': '2' });
  assert.equal(extra.status, 400);
  assert.equal((await extra.json()).error.code, -32020);
  assert.equal(prism.requests.length, before);
});
