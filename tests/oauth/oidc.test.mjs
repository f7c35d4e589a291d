// Sign-in through a real OpenID provider (mode a: `oauth.signIn.oidc`): panva's oidc-provider on
// 127.0.0.1 (tests/oauth/idp.mjs). Chromium goes from the SDK's authorization URL to mcp-edge's
// /authorize, on to the provider's login and consent pages, back to mcp-edge's /oauth/callback,
// through mcp-edge's consent page (Allow) to the client's loopback redirect URI. The principal's
// roles come from the provider's `groups` claim (`roleMap`), or `defaultRoles`; a tool's URL
// carries the signed-in email to the upstream, and a tool that opts in sends the provider's own
// access token upstream, where it works at the provider (and stays out of replies). The console
// signs in through the same chain, as its own client, without a consent step.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { SIGN_IN_TIMEOUT, closePage, launchBrowser, open, fillConsent, followUntil, screenshot, startCallbackServer } from './browser.mjs';
import { startIdp, IDP_CLIENT_ID, IDP_CLIENT_SECRET, LOGIN_FORM, CONSENT_FORM } from './idp.mjs';
import { MemoryOAuthProvider, startOAuthWorker } from './worker.mjs';

const message = { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] };

function oidcConfig(issuer) {
  const bearer = { Authorization: 'Bearer {principal.upstreamToken}' };
  const tools = [
    { name: 'echo', inputSchema: message, http: { url: '{+env.UPSTREAM_URL}/echo' } },
    { name: 'admin_echo', roles: ['admin'], inputSchema: message, http: { url: '{+env.UPSTREAM_URL}/echo' } },
    { name: 'user_echo', roles: ['user'], inputSchema: message, http: { url: '{+env.UPSTREAM_URL}/echo' } },
    { name: 'whoami', http: { method: 'GET', url: '{+env.UPSTREAM_URL}/inspect/{principal.subject}{?principal.email}' } },
    // The provider's token, to the provider's userinfo endpoint: a per-user backend.
    { name: 'provider_me', forwardUpstreamToken: true, http: { method: 'GET', url: `${issuer}/me`, headers: bearer } },
    // The same token to an upstream that quotes it back: redacted in the reply.
    { name: 'quoted_token', forwardUpstreamToken: true, http: { method: 'GET', url: '{+env.UPSTREAM_URL}/whoami', headers: bearer } },
    // A tool that does not opt in sends no token of the caller's.
    { name: 'no_token', http: { method: 'GET', url: '{+env.UPSTREAM_URL}/whoami' } },
  ];
  return {
    oauth: {
      signIn: {
        oidc: {
          issuer,
          clientId: IDP_CLIENT_ID,
          secret: 'IDP_CLIENT_SECRET',
          scopes: ['openid', 'email', 'profile', 'groups'],
          subject: '/sub',
          email: '/email',
          groups: '/groups',
          roleMap: { admins: ['admin'] },
          defaultRoles: ['user'],
        },
      },
      registration: 'open',
      privateHosts: ['127.0.0.1', 'localhost'],
    },
    servers: [{ route: '/mcp', name: 'mcp-edge-oidc-test', version: '0.0.1', privateUpstreams: ['127.0.0.1', 'localhost'], auth: { oauth: true }, tools }],
  };
}

let idp;
let worker;
let callback;
before(async () => {
  idp = await startIdp();
  callback = await startCallbackServer();
  worker = await startOAuthWorker({ config: oidcConfig(idp.issuer), bindings: { IDP_CLIENT_SECRET } });
  // The provider learns its client's redirect URI now that the Worker's origin is known.
  idp.configure({ redirectUris: [`${worker.origin}/oauth/callback`] });
});
after(async () => {
  await worker?.close();
  await idp?.close();
  await callback?.close();
});

/**
 * Chromium, fresh (signed in nowhere), through the whole chain as `login`; returns what it saw.
 * `screenshotName` keeps mcp-edge's consent page.
 */
async function signInThroughProvider(url, login, screenshotName) {
  const browser = await launchBrowser();
  const seen = {};
  try {
    const page = await browser.newPage();
    await open(page, url);
    // mcp-edge's /authorize sent the browser on to the provider's login page.
    await page.waitForSelector(LOGIN_FORM.login, { timeout: 15_000 });
    seen.idpAuthorize = page.visited.map((u) => new URL(u)).find((u) => u.origin === idp.issuer && u.pathname === '/auth');
    await page.fill(LOGIN_FORM.login, login);
    await page.fill(LOGIN_FORM.password, 'whatever: the provider takes any');
    await page.click(LOGIN_FORM.submit);
    await page.waitForSelector(CONSENT_FORM.submit, { timeout: 15_000 });
    // The provider's consent; then back to mcp-edge, whose consent page needs no password.
    const consent = page.waitForResponse((r) => new URL(r.url()).origin === worker.origin && new URL(r.url()).pathname === '/oauth/callback');
    await page.click(CONSENT_FORM.submit);
    seen.callbackResponse = await consent;
    await page.waitForSelector('form#consent', { timeout: 15_000 });
    seen.consentUrl = new URL(page.url());
    seen.hasUsername = (await page.$('#username')) !== null;
    seen.hasPassword = (await page.$('#password')) !== null;
    if (screenshotName) await screenshot(page, screenshotName);
    const reached = await followUntil(page, callback.url, async () => {
      seen.texts = await fillConsent(page, {});
    });
    seen.reached = reached;
    seen.visited = [...page.visited];
    seen.callback = await callback.next();
    await closePage(page);
    return seen;
  } finally {
    await browser.close();
  }
}

async function signedInClient(login, screenshotName) {
  let seen;
  const provider = new MemoryOAuthProvider({
    redirectUrl: callback.url,
    clientName: `OIDC test client (${login})`,
    authorize: async (url) => {
      seen = await signInThroughProvider(url, login, screenshotName);
      return seen.callback;
    },
  });
  const transport = new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider });
  await assert.rejects(new Client({ name: 'oidc-test', version: '1' }).connect(transport, { timeout: SIGN_IN_TIMEOUT }), UnauthorizedError);
  assert.ok(seen, 'the SDK sent the user to authorize');
  await transport.finishAuth(seen.callback.code);
  const client = new Client({ name: 'oidc-test', version: '1' });
  const transport2 = new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider });
  await client.connect(transport2);
  return { client, transport: transport2, provider, seen };
}

test('alice signs in at the OpenID provider through Chromium; her groups make her an admin', async () => {
  const { client, transport, provider, seen } = await signedInClient('alice', 'oidc-consent');
  try {
    // mcp-edge asked the provider for a code, for its own callback, with the configured scopes.
    assert.ok(seen.idpAuthorize, `the browser went to ${idp.issuer}/auth: ${seen.visited?.join(' → ')}`);
    const q = Object.fromEntries(seen.idpAuthorize.searchParams);
    assert.equal(q.client_id, IDP_CLIENT_ID);
    assert.equal(q.redirect_uri, `${worker.origin}/oauth/callback`);
    assert.equal(q.response_type, 'code');
    assert.deepEqual(q.scope.split(' ').sort(), ['email', 'groups', 'openid', 'profile']);
    assert.ok(q.state, 'mcp-edge sends a state to the provider');
    // The provider's code came back to /oauth/callback, which answered with the consent page.
    assert.equal(seen.callbackResponse.status(), 200);
    assert.equal(seen.hasUsername, false, 'signed in through the provider: no username field');
    assert.equal(seen.hasPassword, false);
    assert.equal(seen.texts['client-name'], 'OIDC test client (alice)');
    // The provider's token and userinfo endpoints were used by the Worker, not the browser.
    const tokenCalls = idp.requests.filter((r) => r.method === 'POST' && r.path === '/token');
    assert.equal(tokenCalls.length, 1, 'mcp-edge traded the provider\'s code once');
    assert.ok(!seen.visited.some((u) => u.startsWith(`${idp.issuer}/token`)));
    // The client's redirect: code, state, issuer (mcp-edge's, not the provider's).
    assert.equal(seen.callback.state, provider.lastState);
    assert.equal(seen.callback.iss, worker.origin);
    assert.match(provider.tokens().access_token, /^mcpe_at\./);

    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name);
    assert.ok(names.includes('echo'));
    assert.ok(names.includes('admin_echo'), `roleMap admins → admin: ${names}`);
    const echoed = await client.callTool({ name: 'admin_echo', arguments: { message: 'alice via the provider' } });
    assert.equal(echoed.isError, undefined);
    assert.deepEqual(echoed.structuredContent, { message: 'alice via the provider' });

    const who = await client.callTool({ name: 'whoami', arguments: {} });
    assert.equal(who.isError, undefined);
    assert.equal(who.structuredContent.path, '/inspect/alice');
    assert.equal(new URLSearchParams(who.structuredContent.query).get('principal.email'), 'alice@example.com');

    // The provider's token reaches a tool that opts in, and works at the provider: its userinfo
    // answers for alice.
    const me = await client.callTool({ name: 'provider_me', arguments: {} });
    assert.equal(me.isError, undefined, JSON.stringify(me));
    assert.equal(me.structuredContent.sub, 'alice');
    assert.equal(me.structuredContent.email, 'alice@example.com');
    // An upstream that quotes it back: it got the provider's token (not mcp-edge's), and the
    // reply carries it redacted.
    const quoted = await client.callTool({ name: 'quoted_token', arguments: {} });
    const heard = worker.upstream.seen.findLast((r) => r.url === '/whoami').headers.authorization;
    assert.match(heard, /^Bearer \S+$/);
    assert.doesNotMatch(heard, /mcpe_at\./);
    assert.ok(!JSON.stringify(quoted).includes(heard.slice('Bearer '.length)), `the token is in the reply: ${JSON.stringify(quoted)}`);
    assert.deepEqual(quoted.structuredContent, { authorization: 'Bearer [redacted]' });
    // Not sent by default.
    const none = await client.callTool({ name: 'no_token', arguments: {} });
    assert.deepEqual(none.structuredContent, { authorization: null });
    // mcp-edge's own access token never carries the provider's token in the clear.
    const body = Buffer.from(provider.tokens().access_token.split('.')[1], 'base64url').toString();
    assert.ok(!body.includes(heard.slice('Bearer '.length)));
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test('bob, in no mapped group, gets the default roles only', async () => {
  const { client, transport } = await signedInClient('bob');
  try {
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name).filter((n) => !['whoami', 'provider_me', 'quoted_token', 'no_token'].includes(n)).sort();
    assert.deepEqual(names, ['echo', 'user_echo']);
    const echoed = await client.callTool({ name: 'user_echo', arguments: { message: 'bob via the provider' } });
    assert.deepEqual(echoed.structuredContent, { message: 'bob via the provider' });
    // The provider says bob's email is not verified: it does not reach the upstream.
    const who = await client.callTool({ name: 'whoami', arguments: {} });
    assert.deepEqual(who.structuredContent, { path: '/inspect/bob', query: '' });
    const refused = await client.callTool({ name: 'admin_echo', arguments: { message: 'not bob' } }).catch((e) => e);
    // A tool the principal may not see: refused, as an error result or a protocol error.
    assert.ok(refused instanceof Error || refused.isError === true, `admin_echo refused for bob: ${JSON.stringify(refused)}`);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
});

test('the console signs alice in through the provider too, with no consent step of its own', async () => {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await open(page, `${worker.origin}/`);
    await followUntil(page, idp.issuer, () => page.click('a.button[href="/console/signin"]'));
    await page.waitForSelector(LOGIN_FORM.login, { timeout: 15_000 });
    await page.fill(LOGIN_FORM.login, 'alice');
    await page.fill(LOGIN_FORM.password, 'whatever: the provider takes any');
    await page.click(LOGIN_FORM.submit);
    await page.waitForSelector(CONSENT_FORM.submit, { timeout: 15_000 });
    // The provider's consent, then straight back to the console: the console is the
    // deployment's own page, and mcp-edge's consent page does not appear.
    const callbackAnswer = page.waitForResponse((r) => r.url().startsWith(`${worker.origin}/oauth/callback?`), { timeout: 30_000 });
    const home = page.waitForResponse((r) => r.url() === `${worker.origin}/` && r.request().isNavigationRequest(), { timeout: 30_000 });
    await page.click(CONSENT_FORM.submit);
    const answered = await callbackAnswer;
    assert.equal(answered.status(), 302);
    assert.ok(answered.headers().location.startsWith(`${worker.origin}/console/callback?code=`), answered.headers().location);
    await home;
    await page.waitForURL(`${worker.origin}/`, { waitUntil: 'load' });
    // Her provider groups made her an admin: the configuration and health sections show.
    assert.match(await page.locator('.account').textContent(), /Signed in as alice@example\.com\s*admin/);
    await page.locator('#admin').waitFor();
    await screenshot(page, 'console-signed-in-oidc');
    await closePage(page);
  } finally {
    await browser.close();
  }
});
