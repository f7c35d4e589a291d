// The mapping rules of docs/openapi.md, one by one, on small documents: the exact tool each
// operation becomes, or the exact reason it is skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importOpenApi, parseFilters, uniqueName } from '../../cli/openapi/import.mjs';

const folder = mkdtempSync(join(tmpdir(), 'mcp-edge-mapping-'));
let n = 0;
/** Imports `doc` (an object, written as JSON, or YAML text) with `options`. */
async function imported(doc, options = {}) {
  const file = join(folder, `${n++}.${typeof doc === 'string' ? 'yaml' : 'json'}`);
  writeFileSync(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
  return importOpenApi(file, { server: 's', ...options });
}
const api = (paths, extra = {}) => ({ openapi: '3.0.3', info: { title: 'T', version: '2' }, servers: [{ url: 'https://api.example.com/v1' }], paths, ...extra });
const ok = { 200: { description: 'ok' } };

test('parameters: names made variables, collisions renamed visibly, styles carried, required and keywords kept', async () => {
  const r = await imported(api({
    '/items/{item-id}': {
      parameters: [{ name: 'item-id', in: 'path', required: true, schema: { type: 'string' } }],
      put: {
        operationId: 'put item',
        summary: 'Replace an item',
        parameters: [
          { name: 'id', in: 'query', schema: { type: 'integer', minimum: 1, default: 5 } },
          { name: 'id', in: 'header', schema: { type: 'string' } },
          { name: 'tags', in: 'query', explode: false, schema: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } } },
          { name: 'filter', in: 'query', style: 'deepObject', explode: true, schema: { type: 'object', properties: { q: { type: 'string' } } } },
          { name: 'sid', in: 'cookie', required: true, schema: { type: 'string' } },
          { name: 'Accept', in: 'header', schema: { type: 'string' } },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['id'], properties: { id: { type: 'string', readOnly: false }, created: { type: 'string', readOnly: true }, note: { type: 'string', nullable: true } } } } } },
        responses: ok,
      },
    },
  }));
  assert.deepEqual(r.skipped, []);
  assert.deepEqual(r.added, [{
    name: 'put_item',
    title: 'Replace an item',
    description: 'Replace an item\n\nHTTP: PUT /items/{item-id}',
    inputSchema: {
      type: 'object',
      properties: {
        item_id: { type: 'string', minLength: 1, description: 'Sent as the path parameter "item-id".' },
        id: { type: 'integer', minimum: 1, default: 5 },
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        filter: { type: 'object', properties: { q: { type: 'string' } } },
        id_header: { type: 'string', description: 'Sent as the header parameter "id".', 'x-mcp-header': 'id' },
        sid: { type: 'string', description: 'Sent as the cookie parameter "sid".' },
        id_body: { type: 'string', description: 'Sent as the request body property "id".' },
        note: { type: ['string', 'null'] },
      },
      required: ['item_id', 'sid', 'id_body'],
    },
    annotations: { idempotentHint: true },
    http: {
      method: 'PUT',
      url: 'https://api.example.com/v1/items/{item_id}',
      body: { id: '{id_body}', note: '{note}' },
      headers: { id: '{id_header}' },
      query: { id: '{id}', tags: { value: '{tags}', explode: false }, filter: { value: '{filter}', style: 'deepObject', explode: true } },
      cookies: { sid: '{sid}' },
    },
  }]);
});

test('bodies: a union is one argument; a form body; no body is said; allOf merged; 3.1 from YAML', async () => {
  const r = await imported(`openapi: 3.1.0
info: {title: T, version: '1'}
servers: [{url: 'https://{region}.example.com', variables: {region: {default: eu}}}]
paths:
  /a:
    post:
      operationId: union
      requestBody: {content: {application/vnd.api+json: {schema: {oneOf: [{type: string}, {type: integer}]}}}}
      responses: {'204': {description: none}}
  /b:
    post:
      operationId: form
      requestBody: {content: {application/x-www-form-urlencoded: {schema: {type: object, properties: {q: {type: [string, 'null']}, n: {type: integer, exclusiveMinimum: 0}, count: {type: number, format: int32, minimum: 0}, big: {type: [number, 'null'], format: int64}, key: {type: string, format: byte}}}}}}
      responses: {'200': {description: ok, content: {application/json: {schema: {type: object, properties: {id: {type: string}, secret: {type: string, writeOnly: true}}}}}}}
  /c:
    delete:
      operationId: drop
      responses: {'204': {description: none}}
  /d:
    patch:
      operationId: merged
      requestBody: {content: {application/json: {schema: {allOf: [{type: object, properties: {a: {type: string}}, required: [a]}, {type: object, properties: {b: {type: integer}}}]}}}}
      responses: {'200': {description: ok}}
`);
  const tools = Object.fromEntries(r.added.map((t) => [t.name, t]));
  // An optional whole body is still a required argument: a missing one would be sent as null.
  assert.deepEqual(tools.union.inputSchema, { type: 'object', properties: { body: { oneOf: [{ type: 'string' }, { type: 'integer' }], description: 'The request body.' } }, required: ['body'] });
  assert.deepEqual(tools.union.http, { method: 'POST', url: 'https://eu.example.com/a', body: '{body}', headers: { 'Content-Type': 'application/vnd.api+json' } });
  assert.deepEqual(tools.form.http, { method: 'POST', url: 'https://eu.example.com/b', body: { q: '{q}', n: '{n}', count: '{count}', big: '{big}', key: '{key}' }, bodyType: 'form' });
  assert.deepEqual(tools.form.inputSchema.properties.n, { type: 'integer', exclusiveMinimum: 0 });
  assert.deepEqual(tools.form.inputSchema.properties.count, { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647 });
  assert.deepEqual(tools.form.inputSchema.properties.big, { type: ['integer', 'null'], format: 'int64' });
  assert.deepEqual(tools.form.inputSchema.properties.key, { type: 'string', format: 'byte', pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' });
  assert.deepEqual(tools.form.outputSchema, { type: 'object', properties: { id: { type: 'string' } } });
  assert.deepEqual(tools.drop, { name: 'drop', description: 'HTTP: DELETE /c', inputSchema: { type: 'object', properties: {} }, annotations: { destructiveHint: true, idempotentHint: true }, http: { method: 'DELETE', url: 'https://eu.example.com/c', bodyType: 'none' } });
  assert.deepEqual(tools.merged.inputSchema, { type: 'object', properties: { a: { type: 'string' }, b: { type: 'integer' } }, required: ['a'] });
  assert.deepEqual(tools.merged.http.body, { a: '{a}', b: '{b}' });
});

test('security: each supported scheme over a named secret; unsupported ones skip with the reason', async () => {
  const r = await imported(api({
    '/k': { get: { operationId: 'key', responses: ok } },
    '/q': { get: { operationId: 'query_key', security: [{ digest: [] }, { qkey: [] }], responses: ok } },
    '/b': { get: { operationId: 'basic', security: [{ basic: [] }, {}], responses: ok } },
    '/o': { get: { operationId: 'open', security: [{}], responses: ok } },
    '/d': { get: { operationId: 'digest', security: [{ digest: [] }], responses: ok } },
    '/c': { get: { operationId: 'cookie', security: [{ ckey: [], oidc: [] }], responses: ok } },
  }, {
    security: [{ hkey: [] }],
    components: { securitySchemes: {
      hkey: { type: 'apiKey', in: 'header', name: 'X-Key' },
      qkey: { type: 'apiKey', in: 'query', name: 'api_key' },
      ckey: { type: 'apiKey', in: 'cookie', name: 'session' },
      basic: { type: 'http', scheme: 'basic' },
      digest: { type: 'http', scheme: 'digest' },
      oidc: { type: 'openIdConnect', openIdConnectUrl: 'https://id.example.com/.well-known/openid-configuration' },
    } },
  }), { secretPrefix: 'shop' });
  const http = Object.fromEntries(r.added.map((t) => [t.name, t.http]));
  assert.deepEqual(http.key.headers, { 'X-Key': '{env.SHOP_HKEY}' });
  assert.deepEqual(http.query_key.query, { api_key: '{env.SHOP_QKEY}' });
  assert.deepEqual(http.basic.headers, { Authorization: 'Basic {env.SHOP_BASIC}' });
  assert.equal(http.open.headers, undefined);
  // OpenID Connect is a connection (below): no header of its own, the tool names it.
  assert.deepEqual(http.cookie, { method: 'GET', url: 'https://api.example.com/v1/c', cookies: { session: '{env.SHOP_CKEY}' } });
  assert.deepEqual(r.added.find((t) => t.name === 'cookie').auth, { connection: 'shop_oidc' });
  assert.deepEqual(r.skipped, [{ operation: 'digest', where: 'GET /d', reason: 'security scheme "digest" (HTTP digest) is not supported' }]);
  assert.deepEqual(r.secrets.map((s) => s.name).sort(), ['SHOP_BASIC', 'SHOP_CKEY', 'SHOP_HKEY', 'SHOP_OIDC_CLIENT_SECRET', 'SHOP_QKEY']);
});

const OAUTH_SCHEMES = {
  github: { type: 'oauth2', flows: {
    authorizationCode: { authorizationUrl: 'https://github.com/login/oauth/authorize', tokenUrl: 'https://github.com/login/oauth/access_token', scopes: { repo: 'repositories', 'read:user': 'profile', 'admin:org': 'organizations' } },
    implicit: { authorizationUrl: 'https://github.com/login/oauth/authorize', scopes: {} },
  } },
  service: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: 'https://auth.example.com/oauth/token', scopes: { 'reports:read': 'reports' } } } },
  google: { type: 'openIdConnect', openIdConnectUrl: 'https://accounts.google.com/.well-known/openid-configuration' },
  legacy: { type: 'oauth2', flows: { implicit: { authorizationUrl: 'https://old.example.com/authorize', scopes: { read: 'read' } } } },
  odd: { type: 'openIdConnect', openIdConnectUrl: 'https://id.example.com/oidc-config.json' },
  key: { type: 'apiKey', in: 'header', name: 'X-Key' },
};

test('OAuth: oauth2 and openIdConnect schemes become connections; the tools name them, with the scopes they require', async () => {
  const r = await imported(api({
    '/repos': { get: { operationId: 'repos', security: [{ github: ['repo'] }], responses: ok } },
    '/me': { get: { operationId: 'me', security: [{ github: ['read:user'] }], responses: ok } },
    '/reports': { get: { operationId: 'reports', security: [{ service: ['reports:read'] }], responses: ok } },
    '/files': { get: { operationId: 'files', security: [{ google: ['openid', 'email'], key: [] }], responses: ok } },
    '/old': { get: { operationId: 'old', security: [{ legacy: ['read'] }], responses: ok } },
    '/odd': { get: { operationId: 'odd', security: [{ odd: [] }], responses: ok } },
    '/both': { get: { operationId: 'both', security: [{ github: [], service: [] }], responses: ok } },
  }, { components: { securitySchemes: OAUTH_SCHEMES } }), { secretPrefix: 'shop', clientIds: { github: 'Iv1.abc123' } });
  const tools = Object.fromEntries(r.added.map((t) => [t.name, t]));
  // The tool names its connection and sends no Authorization of its own: mcp-edge adds the
  // user's token as a bearer.
  assert.deepEqual(tools.repos.auth, { connection: 'shop_github' });
  assert.equal(tools.repos.http.headers, undefined);
  assert.deepEqual(tools.me.auth, { connection: 'shop_github' });
  assert.deepEqual(tools.reports.auth, { connection: 'shop_service' });
  assert.deepEqual(tools.files.auth, { connection: 'shop_google' });
  assert.deepEqual(tools.files.http.headers, { 'X-Key': '{env.SHOP_KEY}' });
  // Flows without a token endpoint, and an OpenID Connect URL that is not a discovery document
  // under its issuer, stay a token you obtain, as before.
  assert.equal(tools.old.auth, undefined);
  assert.deepEqual(tools.old.http.headers, { Authorization: 'Bearer {env.SHOP_LEGACY}' });
  assert.deepEqual(tools.odd.http.headers, { Authorization: 'Bearer {env.SHOP_ODD}' });
  assert.deepEqual(r.skipped, [{ operation: 'both', where: 'GET /both', reason: 'its security needs 2 OAuth connections at once (github, service); a tool uses one' }]);

  assert.deepEqual(r.config.connections, [
    // Scopes: the ones the imported operations require, not every scope the flow offers. The
    // title is the API's, with the scheme when it has several.
    { name: 'shop_github', title: 'T (github)', grant: 'authorization_code', authorizationEndpoint: 'https://github.com/login/oauth/authorize', tokenEndpoint: 'https://github.com/login/oauth/access_token', clientId: 'Iv1.abc123', clientSecret: 'SHOP_GITHUB_CLIENT_SECRET', scopes: ['repo', 'read:user'] },
    { name: 'shop_service', title: 'T (service)', grant: 'client_credentials', tokenEndpoint: 'https://auth.example.com/oauth/token', clientSecret: 'SHOP_SERVICE_CLIENT_SECRET', scopes: ['reports:read'] },
    { name: 'shop_google', title: 'T (google)', grant: 'authorization_code', issuer: 'https://accounts.google.com', clientSecret: 'SHOP_GOOGLE_CLIENT_SECRET', scopes: ['openid', 'email'] },
  ]);
  // No placeholder client id: the ones not given are asked for, with where to register.
  assert.deepEqual(r.notes.filter((n) => n.startsWith('connection')), [
    'connection "shop_github": put the OAuth app\'s client secret in SHOP_GITHUB_CLIENT_SECRET (npx wrangler secret put SHOP_GITHUB_CLIENT_SECRET)',
    'connection "shop_github" is each user\'s own: add the top-level "oauth" sign-in (docs/oauth.md) and "auth": {"oauth": true} on server "s"',
    'connection "shop_service": register an OAuth app at auth.example.com, then give its client id (--client-id service=ID, or "clientId" in the connection) and its secret (npx wrangler secret put SHOP_SERVICE_CLIENT_SECRET)',
    'connection "shop_google": register an OAuth app at accounts.google.com with the redirect URI https://<your worker>/connections/callback, then give its client id (--client-id google=ID, or "clientId" in the connection) and its secret (npx wrangler secret put SHOP_GOOGLE_CLIENT_SECRET)',
    'connection "shop_google" is each user\'s own: add the top-level "oauth" sign-in (docs/oauth.md) and "auth": {"oauth": true} on server "s"',
  ]);
  assert.deepEqual(r.secrets.map((s) => s.name).sort(), ['SHOP_GITHUB_CLIENT_SECRET', 'SHOP_GOOGLE_CLIENT_SECRET', 'SHOP_KEY', 'SHOP_LEGACY', 'SHOP_ODD', 'SHOP_SERVICE_CLIENT_SECRET']);
  assert.equal(r.secrets.find((s) => s.scheme === 'github').how, 'client secret of the OAuth app for connection "shop_github"');
  assert.deepEqual(r.connections.map((c) => c.name), ['shop_github', 'shop_service', 'shop_google']);
});

test('OAuth: with connections: false (--no-connections), every OAuth scheme is a token from a secret, as before', async () => {
  const r = await imported(api({
    '/repos': { get: { operationId: 'repos', security: [{ github: ['repo'] }], responses: ok } },
    '/files': { get: { operationId: 'files', security: [{ google: [] }], responses: ok } },
  }, { components: { securitySchemes: OAUTH_SCHEMES } }), { secretPrefix: 'shop', connections: false });
  assert.deepEqual(r.added.map((t) => [t.auth, t.http.headers]), [[undefined, { Authorization: 'Bearer {env.SHOP_GITHUB}' }], [undefined, { Authorization: 'Bearer {env.SHOP_GOOGLE}' }]]);
  assert.equal(r.config.connections, undefined);
  assert.deepEqual(r.secrets.map((s) => s.how), ['OAuth 2 access token, sent as a bearer', 'OpenID Connect access token, sent as a bearer']);
});

test('OAuth: into a configuration with sign-in, a new server gets "auth": {"oauth": true}; a re-import keeps the client id', async () => {
  const doc = api({ '/repos': { get: { operationId: 'repos', security: [{ github: ['repo'] }], responses: ok } } }, { components: { securitySchemes: { github: OAUTH_SCHEMES.github } } });
  const config = { oauth: { signIn: { users: [] } }, servers: [{ name: 'other', version: '1', route: '/mcp', tools: [] }] };
  const first = await imported(doc, { server: 'gh', clientIds: { '*': 'Iv1.first' } });
  assert.equal(first.config.connections[0].clientId, 'Iv1.first');
  const r = await importOpenApi(join(folder, `${n - 1}.json`), { server: 'gh', clientIds: { '*': 'Iv1.first' } }, config);
  assert.deepEqual(r.server.auth, { oauth: true });
  assert.deepEqual(config.connections.map((c) => [c.name, c.clientId]), [['gh_github', 'Iv1.first']]);
  // A second import of a newer document, without --client-id: the connection is updated in place
  // and keeps the client id the user gave.
  const again = await importOpenApi(join(folder, `${n - 1}.json`), { server: 'gh', replace: true }, config);
  assert.equal(config.connections.length, 1);
  assert.equal(config.connections[0].clientId, 'Iv1.first');
  assert.equal(again.notes.some((x) => /register an OAuth app/.test(x)), false);
  assert.equal(again.notes.some((x) => /is each user's own/.test(x)), false);
});

test('skipped operations say why; optional parameters that cannot be sent are left out with a note', async () => {
  const r = await imported(api({
    '/upload': { post: { operationId: 'upload', requestBody: { content: { 'multipart/form-data': { schema: { type: 'object' } } } }, responses: ok } },
    '/xml': { post: { operationId: 'xml', requestBody: { content: { 'application/xml': {}, 'text/plain': {} } }, responses: ok } },
    '/bin': { post: { operationId: 'bin', requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { f: { type: 'string', format: 'binary' } } } } } }, responses: ok } },
    '/list': { get: { operationId: 'list', parameters: [
      { name: 'where', in: 'query', required: true, schema: { type: 'array', items: { type: 'object', properties: {} } } },
    ], responses: ok } },
    '/opt': { get: { operationId: 'opt', parameters: [
      { name: 'meta', in: 'header', schema: { type: 'object', properties: { a: { type: 'string' } } } },
      { name: 'json', in: 'query', content: { 'application/json': { schema: { type: 'object' } } } },
    ], responses: ok } },
    '/undeclared/{x}': { get: { operationId: 'undeclared', responses: ok } },
    '/trace': { trace: { operationId: 'trace', responses: ok } },
    '/getbody': { get: { operationId: 'getbody', requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } }, responses: ok } },
  }));
  assert.deepEqual(r.skipped.map((s) => `${s.operation}: ${s.reason}`), [
    'upload: its only body is multipart/form-data, which tools cannot send',
    'xml: its body is application/xml or text/plain, which tools cannot send (JSON and form bodies can)',
    'bin: its JSON body holds binary data (format: binary)',
    'list: query parameter "where": a list of objects or lists has no OpenAPI serialization',
    'undeclared: path parameter "x" is not declared',
    'trace: method TRACE is not supported',
    'getbody: a GET request with a required body',
  ]);
  assert.deepEqual(r.added.map((t) => t.name), ['opt']);
  assert.deepEqual(r.notes, [
    'opt: optional query parameter "json" left out: it is serialized by a media type (content), which is not supported',
    'opt: optional header parameter "meta" left out: objects in a header are not supported',
  ]);
  assert.equal(r.operations, 8);
});

test('recursive schemas are cut at a bounded depth; names are valid, bounded and unique', async () => {
  const node = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/components/schemas/Node' } } } };
  const r = await imported(api({
    '/tree': { post: { requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } }, responses: ok } },
    '/tree/{id}': { get: { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }], responses: ok } },
  }, { components: { schemas: { Node: node } } }), { prefix: 'x.' });
  assert.deepEqual(r.added.map((t) => t.name), ['x_post_tree', 'x_get_tree_id']);
  const cut = { description: 'Recursive: its structure repeats here (not described further).' };
  assert.deepEqual(r.added[0].inputSchema.properties.children, {
    type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: cut } } },
  });

  const taken = new Set(['a']);
  assert.equal(uniqueName('a', taken), 'a_2');
  assert.equal(uniqueName('repos/get-content', taken), 'repos_get-content');
  const long = uniqueName('x'.repeat(100), taken);
  assert.equal(long.length, 64);
  assert.match(long, /^x{55}_[0-9a-f]{8}$/);
  assert.notEqual(uniqueName(`${'x'.repeat(99)}y`, taken), long);
});

test('filters: kinds AND, values OR, excludes win; bad filters are refused', async () => {
  const doc = api({
    '/pets': { get: { operationId: 'list', tags: ['pets'], responses: ok }, post: { operationId: 'add', tags: ['pets'], responses: ok } },
    '/pets/{id}': { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], get: { operationId: 'get', tags: ['pets'], responses: ok }, delete: { operationId: 'del', tags: ['admin'], responses: ok } },
    '/users': { get: { operationId: 'users', tags: ['users'], responses: ok } },
  });
  const names = async (include, exclude = []) => (await imported(doc, { include, exclude })).added.map((t) => t.name);
  assert.deepEqual(await names(['tag:pets', 'method:get']), ['list', 'get']);
  assert.deepEqual(await names(['tag:pets,tag:admin'], ['operation:add']), ['list', 'get', 'del']);
  assert.deepEqual(await names(['path:/pets/*']), ['get', 'del']);
  // `**` also matches no segment at all, as in a shell's globstar.
  assert.deepEqual(await names(['path:/pets/**']), ['list', 'add', 'get', 'del']);
  assert.deepEqual(await names([], ['method:get']), ['add', 'del']);
  assert.throws(() => parseFilters(['color:red']), /filter "color:red": expected tag:…, operation:…, path:…, method:…/);
});

test('into an existing server: its tools and settings kept, names made unique or replaced; page size and catalog set', async () => {
  const config = { servers: [{ name: 's', version: '1', route: '/mcp', limits: { maxBodyBytes: 1000 }, tools: [{ name: 'list', http: { url: 'https://x.example.com/' } }] }] };
  const file = join(folder, 'existing.json');
  writeFileSync(file, JSON.stringify(api({ '/l': { get: { operationId: 'list', responses: ok } } })));
  const r = await importOpenApi(file, { server: 's', pageSize: 50, catalog: true }, config);
  assert.equal(r.created, false);
  assert.deepEqual(r.config.servers[0].tools.map((t) => t.name), ['list', 'list_2']);
  assert.deepEqual(r.config.servers[0].limits, { maxBodyBytes: 1000, toolsPageSize: 50 });
  assert.equal(r.config.servers[0].toolDiscovery, 'catalog');

  // A re-import with `replace` updates the tools in place; without it, they come again with `_2`.
  const again = await importOpenApi(file, { server: 's', replace: true }, r.config);
  assert.deepEqual(again.replaced, ['list']);
  assert.deepEqual(again.config.servers[0].tools.map((t) => t.name), ['list', 'list_2']);
  assert.equal(again.config.servers[0].tools[0].http.url, 'https://api.example.com/v1/l');
  const twice = await importOpenApi(file, { server: 's' }, again.config);
  assert.deepEqual(twice.config.servers[0].tools.map((t) => t.name), ['list', 'list_2', 'list_3']);
});

test('--code serves the tools in code mode; with --catalog too, nothing is imported', async () => {
  const file = join(folder, 'code.json');
  writeFileSync(file, JSON.stringify(api({ '/l': { get: { operationId: 'list', responses: ok } } })));
  const r = await importOpenApi(file, { server: 's', code: true });
  assert.equal(r.config.servers[0].toolDiscovery, 'code');
  assert.deepEqual(r.added.map((t) => t.name), ['list']);
  const config = { servers: [] };
  await assert.rejects(importOpenApi(file, { server: 's', code: true, catalog: true }, config), /--catalog and --code are two ways of serving the tools: choose one/);
  assert.deepEqual(config, { servers: [] });
});

test('a document from a URL, in YAML: a relative server URL resolves against it; a missing one is a clear error', async () => {
  const yaml = `openapi: 3.0.3
info: {title: Remote, version: '1'}
servers: [{url: /api/v2}]
paths:
  /ping:
    get: {operationId: ping, responses: {'200': {description: ok}}}
`;
  const server = createServer((req, res) => {
    if (req.url === '/spec/openapi.yaml') res.writeHead(200, { 'content-type': 'application/yaml' }).end(yaml);
    else res.writeHead(404).end('not here');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    const r = await importOpenApi(`${base}/spec/openapi.yaml`, { server: 'remote' });
    assert.deepEqual(r.added.map((t) => t.http.url), [`${base}/api/v2/ping`]);
    assert.deepEqual(r.server.privateUpstreams, ['127.0.0.1']);
    await assert.rejects(importOpenApi(`${base}/missing.yaml`, {}), /^Error: cannot read http:\/\/127\.0\.0\.1:\d+\/missing\.yaml: Error downloading http:\/\/127\.0\.0\.1:\d+\/missing\.yaml: HTTP ERROR 404$/);
  } finally {
    server.close();
  }
  const file = join(folder, 'relative.yaml');
  writeFileSync(file, yaml);
  // From a file, nothing says where /api/v2 is: the base becomes a variable to set, with a note.
  const unset = await importOpenApi(file, {});
  assert.equal(unset.added[0].http.url, '{+env.REMOTE_BASE_URL}/ping');
  assert.match(unset.notes[0], /^the document's server URL "\/api\/v2" is relative to where the document is served, which a file does not say: set REMOTE_BASE_URL to the API's base URL/);
  const r = await importOpenApi(file, { baseUrl: '{+env.API_BASE}' });
  assert.equal(r.added[0].http.url, '{+env.API_BASE}/ping');
});

test('credentials: a parameter a scheme sets is not an argument; signed AWS schemes skip; path-item servers; required means not null', async () => {
  const r = await imported(api({
    '/k': { get: { operationId: 'keyed', parameters: [{ name: 'x-api-key', in: 'header', required: true, schema: { type: 'string' } }, { name: 'q', in: 'query', required: true, schema: { type: 'string', nullable: true } }], responses: ok } },
    '/aws': { post: { operationId: 'signed', security: [{ sigv4: [] }], responses: ok } },
    '/elsewhere': { servers: [{ url: 'https://other.example.com/v9' }], get: { operationId: 'moved', security: [], responses: ok } },
  }, {
    security: [{}, { key: [] }],
    components: { securitySchemes: {
      key: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      sigv4: { type: 'apiKey', in: 'header', name: 'Authorization', 'x-amazon-apigateway-authtype': 'awsSigv4' },
    } },
  }));
  const [keyed, moved] = r.added;
  assert.deepEqual(keyed.inputSchema, { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });
  assert.deepEqual(keyed.http.headers, { 'X-API-Key': '{env.S_KEY}' });
  assert.deepEqual(r.notes, ['keyed: header parameter "x-api-key" is the security scheme\'s credential: sent from its secret']);
  assert.equal(moved.http.url, 'https://other.example.com/v9/elsewhere');
  assert.deepEqual(r.skipped.map((x) => x.reason), ['security scheme "sigv4" (AWS awsSigv4, a per-request signature) is not supported']);
  await assert.rejects(imported(api({ '/k': { get: { operationId: 'k', tags: ['a'], responses: ok } } }), { include: ['tag:b'] }), /no operation of .* matches the filters \(tag:b\): nothing imported/);
});

test('the command writes only what the Worker would load: a faulty result leaves the file as it was', () => {
  const config = join(folder, 'kept.json');
  const before = `${JSON.stringify({ servers: [{ name: 'x', version: '1', route: '/mcp', tools: [] }] })}\n`;
  writeFileSync(config, before);
  const document = join(folder, 'tiny.json');
  writeFileSync(document, JSON.stringify(api({ '/k': { get: { operationId: 'k', responses: ok } } })));
  const cli = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'cli', 'mcp-edge.mjs');
  const run = (args) => spawnSync(process.execPath, [cli, 'import-openapi', document, '--config', config, ...args], { encoding: 'utf8' });
  const bad = run(['--route', '/api/']);
  assert.equal(bad.status, 1);
  assert.equal(bad.stderr, `mcp-edge: the imported configuration would not load, so ${config} is unchanged:\n${config}: servers[1].route: a route has no empty segments\n`);
  assert.equal(readFileSync(config, 'utf8'), before);
  const good = run(['--route', '/api/mcp']);
  assert.equal(good.status, 0, good.stderr);
  assert.deepEqual(JSON.parse(readFileSync(config, 'utf8')).servers.map((s) => s.route), ['/mcp', '/api/mcp']);
});
