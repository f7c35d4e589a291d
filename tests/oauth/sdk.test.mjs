// The official TypeScript SDK's own OAuth client against mcp-edge's authorization server, with
// sign-in by configured users (mode c, tests/oauth/config.json): the SDK meets a 401, discovers
// the protected resource and the authorization server, registers itself, and sends the user to
// /authorize, where Chromium signs in on the consent page and allows; the SDK trades the code
// for tokens, lists and calls tools, and refreshes its access token (2 seconds long) when it
// expires.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { SIGN_IN_TIMEOUT, closePage, launchBrowser, open, fillConsent, followUntil, screenshot, startCallbackServer } from './browser.mjs';
import { MemoryOAuthProvider, PASSWORDS, initializeWith, pkce, readConfig, recordingFetch, registerClient, startOAuthWorker, tokenRequest } from './worker.mjs';

const TTL = readConfig().oauth.accessTokenTtlSeconds;

let worker;
let browser;
let callback;
before(async () => {
  browser = await launchBrowser();
  callback = await startCallbackServer();
  worker = await startOAuthWorker();
});
after(async () => {
  await browser?.close();
  await callback?.close();
  await worker?.close();
});

// What the first flow saw, for the tests after it.
const first = { log: [], consent: {} };

/** Chromium as the user: the consent page, a wrong password, then the right one and Allow. */
async function signInAndAllow(url, record) {
  const page = await browser.newPage();
  try {
    const res = await open(page, url);
    record.status = res.status();
    record.headers = await res.allHeaders();
    record.cookies = await browser.context.cookies(worker.origin);
    await screenshot(page, 'consent');
    const [wrong] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/authorize'),
      fillConsent(page, { username: 'alice', password: 'not-her-password' }),
    ]);
    record.wrongStatus = wrong.status();
    await page.waitForSelector('#error');
    record.errorText = (await page.textContent('#error')).trim();
    await screenshot(page, 'consent-wrong-password');
    const reached = await followUntil(page, callback.url, async () => {
      record.texts = await fillConsent(page, { username: 'alice', password: PASSWORDS.ALICE_PASSWORD });
    });
    record.visited = [...page.visited];
    record.reached = reached;
    record.signinCookies = (await browser.context.cookies(worker.origin)).filter((c) => c.name === 'mcp_edge_signin');
    return await callback.next();
  } finally {
    await closePage(page);
  }
}

test('the SDK signs in through Chromium: 401, discovery, registration, consent, code, tokens, tools', async () => {
  const provider = new MemoryOAuthProvider({ redirectUrl: callback.url, authorize: (url) => signInAndAllow(url, first.consent) });
  first.provider = provider;
  const transport = new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider, fetch: recordingFetch(first.log) });
  const client = new Client({ name: 'oauth-sdk-test', version: '1.0.0' });
  await assert.rejects(client.connect(transport, { timeout: SIGN_IN_TIMEOUT }), UnauthorizedError);

  // The 401, and how the SDK found its way from it.
  const [challenge] = first.log;
  assert.equal(challenge.method, 'POST');
  assert.equal(challenge.path, '/mcp');
  assert.equal(challenge.status, 401);
  assert.equal(challenge.wwwAuthenticate, `Bearer realm="mcp-edge", resource_metadata="${worker.origin}/.well-known/oauth-protected-resource/mcp"`);
  const step = (method, path) => first.log.find((r) => r.method === method && r.path === path);
  assert.equal(step('GET', '/.well-known/oauth-protected-resource/mcp')?.status, 200);
  assert.equal(step('GET', '/.well-known/oauth-authorization-server')?.status, 200);
  assert.equal(step('POST', '/register')?.status, 201);
  const registered = provider.clientInformation();
  assert.ok(registered.client_id);
  assert.deepEqual(registered.redirect_uris, [callback.url]);

  // The authorization request the SDK built, and the page Chromium met.
  assert.equal(provider.authorizationUrls.length, 1);
  const authorization = provider.authorizationUrls[0];
  assert.equal(`${authorization.origin}${authorization.pathname}`, `${worker.origin}/authorize`);
  const q = Object.fromEntries(authorization.searchParams);
  assert.equal(q.response_type, 'code');
  assert.equal(q.client_id, registered.client_id);
  assert.equal(q.redirect_uri, callback.url);
  assert.equal(q.code_challenge_method, 'S256');
  assert.equal(q.state, provider.lastState);
  assert.equal(q.resource, String(worker.mcpUrl));

  const c = first.consent;
  assert.equal(c.status, 200);
  assert.match(c.headers['content-type'], /^text\/html/);
  assert.equal(c.headers['x-frame-options'], 'DENY');
  assert.match(c.headers['content-security-policy'], /frame-ancestors 'none'/);
  assert.match(c.headers['content-security-policy'], /form-action 'self'/);
  assert.ok(c.cookies.some((k) => k.name === 'mcp_edge_csrf'), 'the consent page sets mcp_edge_csrf');
  assert.equal(c.wrongStatus, 401);
  assert.ok(c.errorText.length > 0, 'a wrong password shows #error');
  assert.equal(c.texts['client-name'], 'TypeScript SDK OAuth test');
  assert.match(c.texts['redirect-host'], /127\.0\.0\.1/);
  assert.equal(c.texts.error, c.errorText, 'the page after a wrong password is the one filled in again');
  assert.equal(c.signinCookies.length, 1, 'a password sign-in sets mcp_edge_signin');
  assert.equal(c.signinCookies[0].httpOnly, true);
  assert.equal(c.signinCookies[0].sameSite, 'Lax');

  // The redirect: code, the SDK's state, and the issuer (RFC 9207).
  assert.ok(provider.callback.code);
  assert.equal(provider.callback.state, provider.lastState);
  assert.equal(provider.callback.iss, worker.origin);
  assert.equal(provider.callback.error, undefined);

  await transport.finishAuth(provider.callback.code);
  const exchange = first.log.filter((r) => r.path === '/token');
  assert.deepEqual(exchange.map((r) => [r.grantType, r.status]), [['authorization_code', 200]]);
  const tokens = provider.tokens();
  assert.match(tokens.access_token, /^mcpe_at\./);
  assert.match(tokens.refresh_token, /^mcpe_rt\./);
  assert.match(tokens.token_type, /^bearer$/i);
  assert.equal(tokens.expires_in, TTL);

  // Connected with the token: the tools alice (admin) may see, and a call that reaches the upstream.
  const transport2 = new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider, fetch: recordingFetch(first.log) });
  const client2 = new Client({ name: 'oauth-sdk-test', version: '1.0.0' });
  await client2.connect(transport2);
  try {
    const { tools } = await client2.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['admin_echo', 'echo']);
    const echoed = await client2.callTool({ name: 'echo', arguments: { message: 'signed in with the TypeScript SDK' } });
    assert.equal(echoed.isError, undefined);
    assert.deepEqual(echoed.structuredContent, { message: 'signed in with the TypeScript SDK' });
    assert.ok(worker.upstream.seen.some((r) => r.url === '/echo' && r.method === 'POST'));
    assert.equal(worker.upstream.seen.some((r) => 'authorization' in r.headers && r.headers.authorization.includes('mcpe_at.')), false, 'the access token never reaches the upstream');

    // The access token expires; the next call is answered 401, the SDK refreshes, and the call works.
    const refreshesBefore = first.log.filter((r) => r.grantType === 'refresh_token').length;
    const tokensBefore = provider.tokens();
    await sleep((TTL + 1.5) * 1000);
    const expired = await initializeWith(worker.mcpUrl, tokensBefore.access_token);
    assert.equal(expired.status, 401, 'an expired access token is refused');
    await expired.body?.cancel();
    const later = await client2.callTool({ name: 'admin_echo', arguments: { message: 'after the refresh' } });
    assert.equal(later.isError, undefined);
    assert.deepEqual(later.structuredContent, { message: 'after the refresh' });
    const refreshes = first.log.filter((r) => r.grantType === 'refresh_token');
    assert.ok(refreshes.length > refreshesBefore, 'the SDK refreshed its token');
    assert.ok(refreshes.every((r) => r.status === 200));
    const refreshed = provider.tokens();
    assert.notEqual(refreshed.access_token, tokensBefore.access_token);
    assert.match(refreshed.access_token, /^mcpe_at\./);
    assert.match(refreshed.refresh_token, /^mcpe_rt\./);
    assert.notEqual(refreshed.refresh_token, tokensBefore.refresh_token, 'each refresh returns a new refresh token');
    assert.equal(provider.authorizationUrls.length, 1, 'no second sign-in');
    assert.equal(callback.hits.length, 1);
    // The session survived the refresh: it belongs to the principal, not to a token.
    assert.equal(first.log.filter((r) => r.path === '/mcp' && r.status === 404).length, 0);
  } finally {
    await transport2.terminateSession().catch(() => {});
    await client2.close();
  }
});

test('a rotated refresh token used again is invalid_grant, and revokes the grant', async () => {
  const { provider } = first;
  assert.ok(provider, 'the first test ran');
  const clientId = provider.clientInformation().client_id;
  // saved[0] came from the code; a refresh replaced its refresh token.
  const old = provider.saved[0].refresh_token;
  const current = provider.tokens().refresh_token;
  assert.notEqual(old, current);
  const reused = await tokenRequest(worker.origin, { grant_type: 'refresh_token', refresh_token: old, client_id: clientId });
  assert.equal(reused.status, 400);
  assert.equal(reused.body.error, 'invalid_grant');
  const revoked = await tokenRequest(worker.origin, { grant_type: 'refresh_token', refresh_token: current, client_id: clientId });
  assert.equal(revoked.status, 400, 'the grant the reused token belonged to is revoked');
  assert.equal(revoked.body.error, 'invalid_grant');
});

test('signed in already: a second client is authorized without a password; Deny sends access_denied', async () => {
  // A new SDK client, in the browser that signed in above (cookie mcp_edge_signin).
  const log = [];
  let page;
  const provider = new MemoryOAuthProvider({
    redirectUrl: callback.url,
    clientName: 'Second SDK client',
    async authorize(url) {
      page = await browser.newPage();
      try {
        const res = await open(page, url);
        assert.equal(res.status(), 200);
        assert.equal(await page.$('#password'), null, 'a signed-in user is not asked for a password again');
        assert.equal(await page.$('#username'), null);
        const reached = await followUntil(page, callback.url, () => fillConsent(page, {}));
        assert.ok(reached.searchParams.get('code'));
        return await callback.next();
      } finally {
        await closePage(page);
      }
    },
  });
  const transport = new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider, fetch: recordingFetch(log) });
  await assert.rejects(new Client({ name: 'second', version: '1' }).connect(transport, { timeout: SIGN_IN_TIMEOUT }), UnauthorizedError);
  assert.equal(provider.callback.iss, worker.origin);
  await transport.finishAuth(provider.callback.code);
  const client = new Client({ name: 'second', version: '1' });
  const transport2 = new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider });
  await client.connect(transport2);
  try {
    const echoed = await client.callTool({ name: 'echo', arguments: { message: 'second client' } });
    assert.deepEqual(echoed.structuredContent, { message: 'second client' });
  } finally {
    await transport2.terminateSession().catch(() => {});
    await client.close();
  }

  // Deny: the redirect URI hears access_denied with the state and the issuer, and no code.
  const registered = await registerClient(worker.origin, { client_name: 'Denied client', redirect_uris: [callback.url] });
  const { challenge } = pkce();
  const url = new URL('/authorize', worker.origin);
  const params = { response_type: 'code', client_id: registered.client_id, redirect_uri: callback.url, code_challenge: challenge, code_challenge_method: 'S256', state: 'deny-me', resource: String(worker.mcpUrl) };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const denyPage = await browser.newPage();
  try {
    await open(denyPage, url);
    const texts = await fillConsent(denyPage, { decision: null });
    assert.equal(texts['client-name'], 'Denied client');
    await followUntil(denyPage, callback.url, () => denyPage.click('#deny', { noWaitAfter: true }));
    const hit = await callback.next();
    assert.equal(hit.error, 'access_denied');
    assert.equal(hit.state, 'deny-me');
    assert.equal(hit.iss, worker.origin);
    assert.equal(hit.code, undefined);
  } finally {
    await closePage(denyPage);
  }
});
