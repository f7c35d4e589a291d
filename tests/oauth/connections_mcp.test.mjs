// An OAuth-protected upstream MCP server behind mcp-edge (issue 42): the TypeScript SDK's own
// server behind the SDK's `requireBearerAuth`, its authorization server oidc-provider. mcp-edge
// finds the authorization server as the MCP spec's client (the 401's challenge, RFC 9728, RFC
// 8414 / OpenID discovery), registers by Dynamic Client Registration, and takes a client
// credentials token bound to the upstream (`resource`, RFC 8707), which the SDK's middleware
// accepts. The client's own token for mcp-edge never goes upstream. Then the abuse cases: a
// resource metadata document for another server, an authorization server naming another
// issuer, metadata pointing at private addresses, an oversized document. Then per user: two
// users of mcp-edge's own sign-in, each connecting their own account at the upstream's
// authorization server (discovered from the upstream, client by Dynamic Client Registration)
// in Chromium; until they do, the upstream lists only its connect tool for them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startAuthorizationServer, startProtectedMcp, lookUp, CC_CLIENT } from './protected_mcp.mjs';
import { PASSWORDS, startOAuthWorker, userToken as signedIn } from './worker.mjs';
import { closePage, fillConsent, launchBrowser, open } from './browser.mjs';
import { CONSENT_FORM, LOGIN_FORM } from './idp.mjs';
import { ElicitRequestSchema, ElicitationCompleteNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

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
  await browser?.close();
  await personal?.close();
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

// Per user: a second worker, with mcp-edge's own sign-in (per-user connections need it).
const USERS = { alice: PASSWORDS.ALICE_PASSWORD, bob: PASSWORDS.BOB_PASSWORD };
let personal;
let browser;

async function startPersonal() {
  personal = await startOAuthWorker({
    config: {
      admission: { requests: 100000, registrationsPerHour: 100000 },
      oauth: {
        signIn: { users: [{ username: 'alice', passwordSecret: 'ALICE_PASSWORD', roles: [] }, { username: 'bob', passwordSecret: 'BOB_PASSWORD', roles: [] }] },
        registration: 'open',
        privateHosts: ['127.0.0.1'],
      },
      connections: [{ name: 'mine', title: 'Protected MCP', scopes: ['mcp:tools'], privateHosts: ['127.0.0.1'] }],
      servers: [{ route: '/mcp', name: 'personal', version: '1', privateUpstreams: ['127.0.0.1'], auth: { oauth: true }, upstreams: [{ name: 'mine', url: mcp.url, prefix: 'm_', auth: { connection: 'mine' } }] }],
    },
  });
  browser = await launchBrowser();
}

/** An access token of mcp-edge's own for `username`. */
const userToken = (username) => signedIn(personal, username, USERS[username]);

async function userClient(token) {
  const client = new Client({ name: 'per-user-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(personal.mcpUrl, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** Chromium as `username`: the connect link, mcp-edge's sign-in and the connect page, then the
 *  upstream's authorization server's login as `username` and its consent. */
async function connectInBrowser(link, username) {
  await browser.context.clearCookies();
  const page = await browser.newPage();
  try {
    await open(page, link);
    await fillConsent(page, { username, password: USERS[username] });
    await page.waitForSelector('#allow', { timeout: 15_000 });
    await page.click('#allow');
    await page.waitForSelector(LOGIN_FORM.login, { timeout: 15_000 });
    await page.fill(LOGIN_FORM.login, username);
    await page.fill(LOGIN_FORM.password, 'any');
    await page.click(LOGIN_FORM.submit);
    await page.waitForSelector(CONSENT_FORM.submit, { timeout: 15_000 });
    await page.click(CONSENT_FORM.submit);
    await page.waitForSelector('#connected', { timeout: 20_000 });
  } finally {
    await closePage(page);
  }
}

const linkIn = (text) => text.match(/https?:\/\/[^\s"\\]+\/connections\/mine\/connect\?state=[A-Za-z0-9_.-]+/)?.[0];

test('per user: the connect tool until each user connects, then the upstream as that user, with that user\'s token only', async () => {
  await startPersonal();
  const tokens = { alice: await userToken('alice'), bob: await userToken('bob') };
  const clients = { alice: await userClient(tokens.alice), bob: await userClient(tokens.bob) };
  try {
    // Before connecting: only the connect tool, whose call gives the link.
    const links = {};
    for (const user of ['alice', 'bob']) {
      const { tools } = await clients[user].listTools();
      assert.deepEqual(tools.map((t) => t.name), ['m_connect'], `${user} sees only the connect tool`);
      assert.equal(tools[0].title, 'Connect Protected MCP');
      const result = await clients[user].callTool({ name: 'm_connect', arguments: {} });
      assert.equal(result.isError, true, JSON.stringify(result));
      links[user] = linkIn(result.content[0].text);
      assert.ok(links[user], result.content[0].text);
    }
    const bearersBefore = mcp.bearers.length;
    // "My connections" offers the same: a Connect link signed for the signed-in user.
    await connectInBrowser(links.alice, 'alice');
    // Alice's lists are hers: after she connects, she sees the upstream's tools, Bob still not.
    let aliceTools = [];
    for (let i = 0; i < 40 && !aliceTools.includes('m_whoami'); i++) {
      aliceTools = (await clients.alice.listTools()).tools.map((t) => t.name);
      if (!aliceTools.includes('m_whoami')) await new Promise((r) => setTimeout(r, 500));
    }
    assert.deepEqual(aliceTools, ['m_whoami']);
    assert.deepEqual((await clients.bob.listTools()).tools.map((t) => t.name), ['m_connect'], "Bob does not see Alice's lists");
    await connectInBrowser(links.bob, 'bob');
    let bobTools = [];
    for (let i = 0; i < 40 && !bobTools.includes('m_whoami'); i++) {
      bobTools = (await clients.bob.listTools()).tools.map((t) => t.name);
      if (!bobTools.includes('m_whoami')) await new Promise((r) => setTimeout(r, 500));
    }
    assert.deepEqual(bobTools, ['m_whoami']);
    // Each call reaches the upstream with that user's token: the upstream names the account.
    for (const user of ['alice', 'bob']) {
      const result = await clients[user].callTool({ name: 'm_whoami', arguments: {} });
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(JSON.parse(result.content[0].text).account, user, `${user}'s call carried ${user}'s token`);
    }
    // Every bearer the upstream saw since is a token its authorization server issued to one of
    // the users for its URL; never mcp-edge's own tokens.
    const seen = new Set(mcp.bearers.slice(bearersBefore));
    assert.ok(seen.size >= 2);
    for (const bearer of seen) {
      assert.ok(!Object.values(tokens).includes(bearer), 'no token passthrough');
      const found = await lookUp(as.provider, bearer);
      assert.ok(['alice', 'bob'].includes(found?.accountId), `a user's token (${found?.accountId})`);
      assert.equal(found.aud, mcp.url, 'bound to the upstream (RFC 8707)');
    }
  } finally {
    await clients.alice.close();
    await clients.bob.close();
  }
});

test('per user: "My connections" offers a Connect link to a user who has not connected', async () => {
  // A fresh browser session as Bob, connected already: Disconnect; then the list offers Connect.
  await browser.context.clearCookies();
  const page = await browser.newPage();
  try {
    await open(page, new URL('/connections', personal.origin));
    await fillConsent(page, { username: 'bob', password: USERS.bob });
    await page.waitForSelector('#connections', { timeout: 15_000 });
    await page.click('li[data-connection="mine"] button.disconnect');
    await page.waitForSelector('li[data-connection="mine"] a.connect', { timeout: 15_000 });
    const href = await page.getAttribute('li[data-connection="mine"] a.connect', 'href');
    assert.match(href, /^\/connections\/mine\/connect\?state=/);
  } finally {
    await closePage(page);
  }
  // Bob, disconnected, is back to the connect tool.
  const client = await userClient(await userToken('bob'));
  try {
    let names = [];
    for (let i = 0; i < 40 && !names.includes('m_connect'); i++) {
      names = (await client.listTools()).tools.map((t) => t.name);
      if (!names.includes('m_connect')) await new Promise((r) => setTimeout(r, 500));
    }
    assert.deepEqual(names, ['m_connect']);
  } finally {
    await client.close();
  }
});

test('per user: the connect tool asks by URL elicitation, waits, and then tells the client its tools changed', async () => {
  // Bob disconnected in the test before.
  const transport = new StreamableHTTPClientTransport(personal.mcpUrl, { requestInit: { headers: { authorization: `Bearer ${await userToken('bob')}` } } });
  const client = new Client({ name: 'per-user-elicitation', version: '1' }, { capabilities: { elicitation: { url: {} } } });
  const asked = [];
  const completed = [];
  const changed = [];
  let browsing;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    browsing = connectInBrowser(request.params.url, 'bob');
    browsing.catch(() => {});
    return { action: 'accept' };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => completed.push(n.params));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed.push(true));
  await client.connect(transport);
  try {
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['m_connect']);
    const result = await client.callTool({ name: 'm_connect', arguments: {} }, undefined, { timeout: 180_000 });
    await browsing;
    assert.equal(asked.length, 1);
    assert.equal(asked[0].mode, 'url');
    assert.match(asked[0].message, /Connect your Protected MCP account/);
    assert.deepEqual(completed.map((c) => c.elicitationId), [asked[0].elicitationId]);
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.match(result.content[0].text, /Protected MCP account is connected/);
    assert.ok(changed.length >= 1, 'notifications/tools/list_changed');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['m_whoami']);
    const said = await client.callTool({ name: 'm_whoami', arguments: {} });
    assert.equal(JSON.parse(said.content[0].text).account, 'bob');
  } finally {
    await client.close();
  }
});
