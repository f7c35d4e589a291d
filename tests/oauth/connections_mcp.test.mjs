// An OAuth-protected upstream MCP server behind mcp-edge (issue 42): the TypeScript SDK's own
// server behind the SDK's `requireBearerAuth`, its authorization server oidc-provider. mcp-edge
// finds the authorization server as the MCP spec's client (the 401's challenge, RFC 9728, RFC
// 8414 / OpenID discovery), registers by Dynamic Client Registration, and takes a client
// credentials token bound to the upstream (`resource`, RFC 8707), which the SDK's middleware
// accepts. The client's own token for mcp-edge never goes upstream. Then the abuse cases: a
// resource metadata document for another server, an authorization server naming another
// issuer, metadata pointing at private addresses, an oversized document.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startAuthorizationServer, startProtectedMcp, lookUp, CC_CLIENT } from './protected_mcp.mjs';
import { startOAuthWorker } from './worker.mjs';

const TOKEN = 'deployment-static-token-0b7c2f1e9a';

let as;
let mcp;
let hostile;
let worker;

/** A server that answers each path from `routes` (JSON, or a function of the origin). */
async function startHostile() {
  let origin;
  const routes = {};
  const server = createServer((req, res) => {
    const path = req.url.split('?')[0];
    const route = routes[path];
    if (!route) {
      if (req.method === 'POST') {
        res.writeHead(401, { 'www-authenticate': routes.challenge?.(origin) ?? 'Bearer' });
        return res.end();
      }
      return res.writeHead(404).end();
    }
    const body = typeof route === 'function' ? route(origin) : route;
    res.writeHead(200, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  return { origin, routes, close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }) };
}

function upstreamsConfig() {
  const fault = (name) => ({ name, url: `${hostile.origin}/${name}/mcp`, prefix: `${name}_`, auth: { connection: name } });
  return {
    connections: [
      { name: 'protected', title: 'Protected MCP', grant: 'client_credentials', privateHosts: ['127.0.0.1'] },
      { name: 'configured', title: 'Protected MCP, configured client', grant: 'client_credentials', clientId: CC_CLIENT.id, clientSecret: 'CC_SECRET', privateHosts: ['127.0.0.1'] },
      ...['wrongresource', 'wrongissuer', 'private', 'huge'].map((name) => ({ name, title: name, grant: 'client_credentials', privateHosts: ['127.0.0.1'] })),
    ],
    upstreams: [
      { name: 'protected', url: mcp.url, prefix: 'p_', auth: { connection: 'protected' } },
      { name: 'configured', url: mcp.url, prefix: 'c_', auth: { connection: 'configured' } },
      fault('wrongresource'),
      fault('wrongissuer'),
      fault('private'),
      fault('huge'),
    ],
  };
}

before(async () => {
  as = await startAuthorizationServer();
  mcp = await startProtectedMcp(as);
  hostile = await startHostile();
  const r = hostile.routes;
  // A resource metadata document for another server.
  r['/.well-known/oauth-protected-resource/wrongresource/mcp'] = () => ({ resource: mcp.url, authorization_servers: [as.issuer] });
  // An authorization server whose metadata names another issuer.
  r['/.well-known/oauth-protected-resource/wrongissuer/mcp'] = (o) => ({ resource: `${o}/wrongissuer/mcp`, authorization_servers: [`${o}/as`] });
  r['/.well-known/oauth-authorization-server/as'] = () => ({ issuer: as.issuer, token_endpoint: `${as.issuer}/token`, registration_endpoint: `${as.issuer}/reg` });
  // An authorization server on the cloud metadata address.
  r['/.well-known/oauth-protected-resource/private/mcp'] = (o) => ({ resource: `${o}/private/mcp`, authorization_servers: ['http://169.254.169.254/latest'] });
  // A document of 100 KB.
  r['/.well-known/oauth-protected-resource/huge/mcp'] = (o) => JSON.stringify({ resource: `${o}/huge/mcp`, authorization_servers: [as.issuer], padding: 'x'.repeat(100_000) });
  const { connections, upstreams } = upstreamsConfig();
  worker = await startOAuthWorker({
    config: {
      connections,
      servers: [{ route: '/mcp', name: 'gateway', version: '1', privateUpstreams: ['127.0.0.1'], auth: { tokens: [{ secret: 'GATEWAY_TOKEN', subject: 'bot' }] }, upstreams }],
    },
    bindings: { GATEWAY_TOKEN: TOKEN, CC_SECRET: CC_CLIENT.secret },
  });
});

after(async () => {
  await worker?.close();
  await hostile?.close();
  await mcp?.close();
  await as?.close();
});

async function connect() {
  const client = new Client({ name: 'cc-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(worker.mcpUrl, { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  return client;
}

test('client credentials from a discovered authorization server reach the SDK-protected upstream; its token is bound to it', async () => {
  const client = await connect();
  try {
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['c_whoami', 'p_whoami'], 'only the upstreams whose authorization checks out are listed');
    for (const name of ['p_whoami', 'c_whoami']) {
      const result = await client.callTool({ name, arguments: {} });
      assert.equal(result.isError, undefined, JSON.stringify(result));
      const said = JSON.parse(result.content[0].text);
      assert.equal(said.account, null, 'a client credentials token has no user');
      if (name === 'c_whoami') assert.equal(said.client, CC_CLIENT.id);
      else assert.notEqual(said.client, CC_CLIENT.id, 'registered a client of its own');
    }
    assert.equal(as.registrations(), 1, 'one Dynamic Client Registration for the deployment');
    // Every bearer the upstream saw is a token its authorization server issued for its URL; none
    // is the client's token for mcp-edge.
    assert.ok(mcp.bearers.length > 0);
    assert.ok(!mcp.bearers.includes(TOKEN), 'no token passthrough');
    for (const bearer of new Set(mcp.bearers)) {
      const found = await lookUp(as.provider, bearer);
      assert.ok(found, 'issued by the authorization server');
      assert.equal(found.aud, mcp.url, 'bound to the upstream (RFC 8707)');
    }
    // Cached per isolate: a few more calls ask for no new token.
    const tokensBefore = as.requests.filter((r) => r.path === '/token').length;
    for (let i = 0; i < 3; i++) await client.callTool({ name: 'p_whoami', arguments: {} });
    assert.equal(as.requests.filter((r) => r.path === '/token').length, tokensBefore);
  } finally {
    await client.close();
  }
});

test('a refused token is asked for again once: the call goes on', async () => {
  const client = await connect();
  try {
    await client.callTool({ name: 'p_whoami', arguments: {} });
    // The authorization server forgets every token it issued: the upstream answers 401.
    for (const bearer of new Set(mcp.bearers)) (await lookUp(as.provider, bearer))?.destroy();
    const tokensBefore = as.requests.filter((r) => r.path === '/token').length;
    const result = await client.callTool({ name: 'p_whoami', arguments: {} });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.ok(as.requests.filter((r) => r.path === '/token').length > tokensBefore, 'a fresh token');
  } finally {
    await client.close();
  }
});

test('abuse: a foreign resource, a foreign issuer, a private authorization server and an oversized document are refused, and said why', async () => {
  // Each refused upstream's list read fails, and the log line says why.
  const why = (name) => worker.logs.find((l) => l.includes('its tool list could not be read') && l.includes(`"upstream":"${name}"`)) ?? '';
  assert.match(why('wrongresource'), /its protected-resource metadata is for http:\/\/127\.0\.0\.1:\d+\/mcp, not for .*\/wrongresource\/mcp \(RFC 9728 §3\.3\)/);
  assert.match(why('wrongissuer'), /names the issuer .* not .*\/as.* \(RFC 8414 §3\.3\)/);
  assert.match(why('private'), /its authorization server http:\/\/169\.254\.169\.254\/latest is not an https URL/);
  assert.match(why('huge'), /oauth-protected-resource\/huge\/mcp is larger than 65536 bytes/);
  // Nothing was sent to the authorization server on behalf of the refused upstreams: the only
  // registration is the good one's.
  assert.equal(as.registrations(), 1);
});

test("mcp-edge's Client ID Metadata Document names itself and the connections' callback, on the request's origin", async () => {
  const res = await fetch(new URL('/connections/client.json', worker.origin));
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^application\/json/);
  const doc = await res.json();
  assert.equal(doc.client_id, `${worker.origin}/connections/client.json`);
  assert.deepEqual(doc.redirect_uris, [`${worker.origin}/connections/callback`]);
  assert.equal(doc.token_endpoint_auth_method, 'none');
  assert.deepEqual(doc.grant_types, ['authorization_code', 'refresh_token']);
});
