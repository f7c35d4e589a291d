// Per-user connections (`connections`, `auth.connection`) end to end: oidc-provider as the
// upstream provider on 127.0.0.1 (refresh tokens, short access tokens, revocation), a real HTTP
// upstream that echoes the Authorization it gets, two users of mcp-edge's own sign-in, each with
// their own account at the provider, Chromium for the console sign-in, the connect page and the
// provider's login and consent, and the TypeScript SDK's client taking a URL-mode elicitation.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ElicitationCompleteNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { closePage, fillConsent, launchBrowser, open, screenshot } from './browser.mjs';
import { CONSENT_FORM, IDP_CLIENT_ID, IDP_CLIENT_SECRET, LOGIN_FORM, startIdp } from './idp.mjs';
import { PASSWORDS, startOAuthWorker, userToken as signedIn } from './worker.mjs';

/** The provider's access tokens live this long (seconds): past mcp-edge's 30 s refresh margin by
 *  little, so a call a few seconds later finds it due for a refresh. */
const ACCESS_TTL = 36;
const USERS = { alice: PASSWORDS.ALICE_PASSWORD, bob: PASSWORDS.BOB_PASSWORD };
const ADMIN_TOKEN = 'admin-token-for-connections-0123456789';

/** A real upstream: it answers each request with the Authorization header it got, and 401 for
 *  a token the test rejects. */
async function startEcho() {
  const seen = [];
  const rejected = new Set();
  const server = createServer((req, res) => {
    const authorization = req.headers.authorization ?? null;
    seen.push(authorization);
    if (authorization && rejected.has(authorization.replace(/^Bearer /, ''))) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' });
      res.end(JSON.stringify({ error: 'invalid_token', token: authorization }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ authorization }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    rejected,
    close: () => new Promise((resolve) => (server.closeAllConnections?.(), server.close(resolve))),
  };
}

function config(issuer) {
  return {
    admission: { requests: 100000, registrationsPerHour: 100000 },
    oauth: {
      signIn: {
        users: [
          { username: 'alice', passwordSecret: 'ALICE_PASSWORD', roles: ['admin'] },
          { username: 'bob', passwordSecret: 'BOB_PASSWORD', roles: [] },
        ],
      },
      registration: 'open',
      accessTokenTtlSeconds: 3600,
      privateHosts: ['127.0.0.1'],
    },
    connections: [
      { name: 'idp', title: 'Test Provider', issuer, clientId: IDP_CLIENT_ID, clientSecret: 'IDP_CONNECTION_SECRET', scopes: ['openid'], privateHosts: ['127.0.0.1'] },
      // A provider on an address the SSRF guard refuses: nothing is fetched from it.
      { name: 'hostile', issuer: 'https://10.0.0.1', clientId: 'x' },
    ],
    servers: [
      {
        route: '/mcp',
        name: 'connections-test',
        version: '1.0.0',
        privateUpstreams: ['127.0.0.1'],
        auth: { oauth: true },
        tools: [
          { name: 'whoami', description: 'Calls the upstream as the caller.', auth: { connection: 'idp' }, http: { method: 'GET', url: '{+env.ECHO_URL}/me' } },
          { name: 'hostile', auth: { connection: 'hostile' }, http: { method: 'GET', url: '{+env.ECHO_URL}/hostile' } },
        ],
      },
    ],
  };
}

let idp;
let echo;
let worker;
let browser;
before(async () => {
  idp = await startIdp();
  echo = await startEcho();
  worker = await startOAuthWorker({ config: config(idp.issuer), bindings: { IDP_CONNECTION_SECRET: IDP_CLIENT_SECRET, ECHO_URL: echo.url, MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  idp.configure({
    redirectUris: [`${worker.origin}/connections/callback`],
    options: {
      ttl: { AccessToken: ACCESS_TTL },
      issueRefreshToken: async () => true,
      features: { revocation: { enabled: true } },
    },
  });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await worker?.close();
  await echo?.close();
  await idp?.close();
});

/** An access token of mcp-edge's own for `username`. */
const userToken = (username) => signedIn(worker, username, USERS[username]);

/** A session over plain fetch: `call(name)` answers the JSON-RPC reply, JSON or SSE. */
async function session(token, capabilities = {}) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
  const init = await fetch(worker.mcpUrl, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 't', version: '1' } } }) });
  assert.equal(init.status, 200);
  await init.text();
  const sid = init.headers.get('mcp-session-id');
  const withSession = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(worker.mcpUrl, { method: 'POST', headers: withSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  let id = 1;
  return {
    async call(name, { accept } = {}) {
      const res = await fetch(worker.mcpUrl, { method: 'POST', headers: { ...withSession, ...(accept ? { accept } : {}) }, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: {} } }) });
      const text = await res.text();
      const messages = res.headers.get('content-type')?.includes('text/event-stream')
        ? text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
        : [JSON.parse(text)];
      return { raw: text, reply: messages.find((m) => m.id !== undefined && (m.result || m.error)) };
    },
  };
}

const linkOf = (text) => text.match(/https?:\/\/[^\s"\\]+\/connections\/idp\/connect\?state=[A-Za-z0-9_.-]+/)?.[0];

/** Chromium as `username`: the connect link, mcp-edge's sign-in, the connect page, then the
 *  provider's login as `account` and its consent. Returns what it saw. */
async function connectInBrowser(link, username, account = username, { shot } = {}) {
  await browser.context.clearCookies();
  const page = await browser.newPage();
  const seen = {};
  try {
    await open(page, link);
    await fillConsent(page, { username, password: USERS[username] });
    await page.waitForSelector('#allow', { timeout: 15_000 });
    seen.who = (await page.textContent('#who')).trim();
    if (shot) await screenshot(page, `${shot}-consent`);
    await page.click('#allow');
    await page.waitForSelector(LOGIN_FORM.login, { timeout: 15_000 });
    seen.browserCookie = (await browser.context.cookies(worker.origin)).find((c) => c.name === 'mcp_edge_connect')?.value;
    seen.authorize = new URL(page.visited.find((u) => u.startsWith(`${idp.issuer}/auth`)));
    await page.fill(LOGIN_FORM.login, account);
    await page.fill(LOGIN_FORM.password, 'any');
    await page.click(LOGIN_FORM.submit);
    await page.waitForSelector(CONSENT_FORM.submit, { timeout: 15_000 });
    await page.click(CONSENT_FORM.submit);
    await page.waitForSelector('#connected', { timeout: 20_000 });
    seen.callback = page.visited.find((u) => u.startsWith(`${worker.origin}/connections/callback`));
    if (shot) await screenshot(page, `${shot}-connected`);
    return seen;
  } finally {
    await closePage(page);
  }
}

/** The provider account an access token was issued to. */
async function accountOf(authorization) {
  const token = await idp.provider.AccessToken.find(authorization.replace(/^Bearer /, ''));
  return token?.accountId;
}

const tokens = {};
const flows = {};
const everything = [];

test('without a connection: the link in words, or -32042 for a client that takes URL elicitations', async () => {
  tokens.alice = await userToken('alice');
  tokens.bob = await userToken('bob');
  const plain = await session(tokens.alice);
  const { reply } = await plain.call('whoami');
  everything.push(JSON.stringify(reply));
  assert.equal(reply.result.isError, true);
  const text = reply.result.content[0].text;
  assert.match(text, /Test Provider account, which is not connected/);
  assert.ok(linkOf(text), text);
  flows.aliceTextLink = linkOf(text);
  assert.equal(echo.seen.length, 0, 'nothing went upstream');

  const urls = await session(tokens.alice, { elicitation: { url: {} } });
  const json = await urls.call('whoami', { accept: 'application/json' });
  assert.equal(json.reply.error.code, -32042, json.raw);
  const [elicitation] = json.reply.error.data.elicitations;
  assert.equal(elicitation.mode, 'url');
  assert.ok(elicitation.elicitationId.length >= 16);
  assert.ok(linkOf(elicitation.url));
  flows.aliceLink = elicitation.url;
});

test("the connect link: only its own user's, and forged or hostile ones refused", async () => {
  const forged = await fetch(new URL('/connections/idp/connect?state=eyJwIjoidXNlcjpib2IifQ.00', worker.origin), { redirect: 'manual' });
  assert.equal(forged.status, 400);
  assert.match(await forged.text(), /not valid, or it has expired/);
  const unknown = await fetch(new URL('/connections/nope/connect?state=x', worker.origin), { redirect: 'manual' });
  assert.equal(unknown.status, 404);
  // Not signed in: the console's sign-in, and back here after it.
  const anonymous = await fetch(flows.aliceLink, { redirect: 'manual' });
  assert.equal(anonymous.status, 302);
  const signin = new URL(anonymous.headers.get('location'), worker.origin);
  assert.equal(signin.pathname, '/console/signin');
  assert.equal(signin.searchParams.get('return'), new URL(flows.aliceLink).pathname + new URL(flows.aliceLink).search);
  // Alice's link, opened by Bob signed in: refused.
  await browser.context.clearCookies();
  const page = await browser.newPage();
  try {
    await open(page, flows.aliceLink);
    await fillConsent(page, { username: 'bob', password: USERS.bob });
    await page.waitForSelector('#error', { timeout: 15_000 });
    assert.match(await page.textContent('#error'), /made for another account/);
    assert.equal(await page.$('#allow'), null);
  } finally {
    await closePage(page);
  }
  // A provider on a refused address: the call fails, naming no token, and nothing is fetched.
  const s = await session(tokens.alice);
  const { reply } = await s.call('hostile');
  assert.ok(reply.error, JSON.stringify(reply));
  assert.match(reply.error.message, /10\.0\.0\.1|publishes no metadata|refused|private/);
});

test('two users connect their own accounts; each upstream call carries that user’s token', async () => {
  flows.alice = await connectInBrowser(flows.aliceLink, 'alice', 'alice', { shot: 'connection' });
  assert.equal(flows.alice.who, 'alice');
  assert.equal(flows.alice.authorize.searchParams.get('code_challenge_method'), 'S256');
  assert.ok(flows.alice.authorize.searchParams.get('state'));
  assert.equal(flows.alice.authorize.searchParams.get('redirect_uri'), `${worker.origin}/connections/callback`);

  const bobLink = linkOf((await (await session(tokens.bob)).call('whoami')).reply.result.content[0].text);
  flows.bob = await connectInBrowser(bobLink, 'bob', 'bob');

  for (const user of ['alice', 'bob']) {
    const s = await session(tokens[user]);
    const before = echo.seen.length;
    const { raw, reply } = await s.call('whoami');
    everything.push(raw);
    assert.equal(reply.result.isError, undefined, raw);
    const sent = echo.seen[before];
    assert.match(sent, /^Bearer .+/);
    assert.equal(await accountOf(sent), user, `${user}'s call carried ${user}'s token`);
    // The upstream echoed the token; mcp-edge's reply does not carry it.
    assert.ok(!raw.includes(sent.slice(7)), 'the token is redacted from the reply');
    assert.match(raw, /\[redacted\]/);
  }
});

test('replayed, wrong-browser and wrong-code callbacks are refused', async () => {
  // Alice's callback URL again, with the browser's binding: used already.
  const replay = await fetch(flows.alice.callback, { headers: { cookie: `mcp_edge_connect=${flows.alice.browserCookie}` }, redirect: 'manual' });
  assert.equal(replay.status, 400);
  assert.match(await replay.text(), /used already/);
  // Without the binding: not this browser.
  const other = await fetch(flows.alice.callback, { redirect: 'manual' });
  assert.equal(other.status, 400);
  assert.match(await other.text(), /not started in this browser/);
  // A forged state.
  const forged = await fetch(new URL('/connections/callback?code=x&state=abcd1234.AAAA', worker.origin), { redirect: 'manual' });
  assert.equal(forged.status, 400);
  assert.match(await forged.text(), /no valid state/);
  // A fresh state (a flow started in the browser, never finished) with a code the provider
  // never issued: refused, and the state is spent.
  await browser.context.clearCookies();
  const page = await browser.newPage();
  let state;
  let cookie;
  try {
    await open(page, flows.aliceTextLink);
    await fillConsent(page, { username: 'alice', password: USERS.alice });
    await page.waitForSelector('#allow', { timeout: 15_000 });
    await page.click('#allow');
    await page.waitForSelector(LOGIN_FORM.login, { timeout: 15_000 });
    state = new URL(page.visited.find((u) => u.startsWith(`${idp.issuer}/auth`))).searchParams.get('state');
    cookie = (await browser.context.cookies(worker.origin)).find((c) => c.name === 'mcp_edge_connect').value;
  } finally {
    await closePage(page);
  }
  const wrong = await fetch(new URL(`/connections/callback?code=not-a-code&state=${encodeURIComponent(state)}`, worker.origin), { headers: { cookie: `mcp_edge_connect=${cookie}` }, redirect: 'manual' });
  assert.equal(wrong.status, 400);
  assert.match(await wrong.text(), /refused the code: invalid_grant/);
  // The connect page's POST from another site does nothing.
  const foreign = await fetch(flows.aliceTextLink, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, body: 'decision=allow', redirect: 'manual' });
  assert.equal(foreign.status, 403);
});

test('a token past its refresh margin is refreshed; an upstream 401 refreshes once and retries', async () => {
  const s = await session(tokens.alice);
  const first = echo.seen.length;
  await s.call('whoami');
  const before = echo.seen[first];
  await sleep((ACCESS_TTL - 30 + 2) * 1000);
  const { raw } = await s.call('whoami');
  everything.push(raw);
  const after = echo.seen.at(-1);
  assert.notEqual(after, before, 'a new access token');
  assert.equal(await accountOf(after), 'alice');
  // The upstream refuses the current token: one refresh, one retry, and the call succeeds.
  echo.rejected.add(after.slice(7));
  const n = echo.seen.length;
  const retried = await s.call('whoami');
  everything.push(retried.raw);
  assert.equal(echo.seen.length, n + 2, 'refused once, then retried once');
  assert.equal(retried.reply.result.isError, undefined, retried.raw);
  assert.notEqual(echo.seen.at(-1), after);
});

test('a revoked grant leads back to the connect page', async () => {
  // Bob's grant revoked at the provider: the next refresh is refused, and he is asked to connect.
  const s = await session(tokens.bob);
  await s.call('whoami');
  const token = echo.seen.at(-1).slice(7);
  const grantId = (await idp.provider.AccessToken.find(token)).grantId;
  await (await idp.provider.Grant.find(grantId)).destroy();
  echo.rejected.add(token);
  const { reply } = await s.call('whoami');
  assert.equal(reply.result.isError, true, JSON.stringify(reply));
  assert.ok(linkOf(reply.result.content[0].text), 'the connect link again');
});

test('URL-mode elicitation through the TypeScript SDK: consent in Chromium, then the call goes on', async () => {
  // Bob is disconnected (previous test); his SDK client takes URL elicitations.
  const transport = new StreamableHTTPClientTransport(worker.mcpUrl, { requestInit: { headers: { authorization: `Bearer ${tokens.bob}` } } });
  const client = new Client({ name: 'connections-sdk', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
  const asked = [];
  const completed = [];
  let browsing;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    browsing = connectInBrowser(request.params.url, 'bob', 'bob', { shot: 'connection-elicited' });
    browsing.catch(() => {});
    return { action: 'accept' };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => completed.push(n.params));
  await client.connect(transport);
  try {
    const result = await client.callTool({ name: 'whoami', arguments: {} }, undefined, { timeout: 180_000 });
    await browsing;
    assert.equal(asked.length, 1);
    assert.equal(asked[0].mode, 'url');
    assert.match(asked[0].message, /Connect your Test Provider account/);
    assert.deepEqual(completed.map((c) => c.elicitationId), [asked[0].elicitationId]);
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.equal(await accountOf(echo.seen.at(-1)), 'bob');
    everything.push(JSON.stringify(result));
  } finally {
    await client.close();
  }
});

test('disconnecting revokes at the provider, and no token is in a reply or a log line', async () => {
  await browser.context.clearCookies();
  const page = await browser.newPage();
  try {
    await open(page, new URL('/connections', worker.origin));
    await fillConsent(page, { username: 'alice', password: USERS.alice });
    await page.waitForSelector('li[data-connection="idp"] button.disconnect', { timeout: 15_000 });
    await screenshot(page, 'my-connections');
    const before = idp.requests.filter((r) => r.path === '/token/revocation').length;
    await Promise.all([page.waitForNavigation(), page.click('li[data-connection="idp"] button.disconnect')]);
    assert.match(await page.textContent('li[data-connection="idp"]'), /not connected/);
    assert.equal(idp.requests.filter((r) => r.path === '/token/revocation').length, before + 1, 'revoked at the provider');
  } finally {
    await closePage(page);
  }
  const s = await session(tokens.alice);
  const { reply } = await s.call('whoami');
  assert.equal(reply.result.isError, true);
  // Every token the upstream saw: in no reply mcp-edge sent, and in no log line.
  const sent = echo.seen.filter(Boolean).map((a) => a.slice(7));
  assert.ok(sent.length >= 5);
  const logs = worker.logs.join('\n');
  for (const token of sent) {
    assert.ok(!everything.some((r) => r.includes(token)), 'no reply carries a token');
    assert.ok(!logs.includes(token), 'no log line carries a token');
  }
});

test("an admin removes a user's connection through the admin API", async () => {
  const admin = (method, path) => fetch(new URL(`/admin/api/connections/${path}`, worker.origin), { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const before = idp.requests.filter((r) => r.path === '/token/revocation').length;
  const removed = await admin('DELETE', `idp/${encodeURIComponent('user:bob')}`);
  assert.equal(removed.status, 200);
  assert.deepEqual(await removed.json(), { removed: true });
  assert.equal(idp.requests.filter((r) => r.path === '/token/revocation').length, before + 1, 'revoked at the provider');
  const again = await admin('DELETE', `idp/${encodeURIComponent('user:bob')}`);
  assert.deepEqual(await again.json(), { removed: false });
  assert.equal((await admin('DELETE', 'nope/user:bob')).status, 404);
  assert.equal((await admin('GET', 'idp/user:bob')).status, 405);
  const unauthorized = await fetch(new URL('/admin/api/connections/idp/user:alice', worker.origin), { method: 'DELETE' });
  assert.equal(unauthorized.status, 401);
  // Bob's next call asks him to connect again.
  const { reply } = await (await session(tokens.bob)).call('whoami');
  assert.equal(reply.result.isError, true);
  assert.ok(linkOf(reply.result.content[0].text));
});
