// The sign-in tests' own machinery, checked without mcp-edge: the OpenID provider answers
// discovery and runs a whole authorization-code flow that Chromium signs in to, and the browser
// helpers fill a page shaped as the contract's consent page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { closePage, launchBrowser, open, fillConsent, followUntil, screenshot, startCallbackServer } from './browser.mjs';
import { startIdp, IDP_CLIENT_ID, IDP_CLIENT_SECRET, LOGIN_FORM, CONSENT_FORM } from './idp.mjs';

let browser;
let idp;
let callback;
before(async () => {
  browser = await launchBrowser();
  callback = await startCallbackServer('/oauth/callback');
  idp = await startIdp();
  idp.configure({ redirectUris: [callback.url] });
});
after(async () => {
  await browser?.close();
  await idp?.close();
  await callback?.close();
});

test('the OpenID provider answers discovery on 127.0.0.1 over http', async () => {
  const res = await fetch(`${idp.issuer}/.well-known/openid-configuration`);
  assert.equal(res.status, 200);
  const meta = await res.json();
  assert.equal(meta.issuer, idp.issuer);
  assert.equal(meta.authorization_endpoint, `${idp.issuer}/auth`);
  assert.equal(meta.token_endpoint, `${idp.issuer}/token`);
  assert.equal(meta.userinfo_endpoint, `${idp.issuer}/me`);
  assert.ok(meta.jwks_uri.startsWith(idp.issuer));
  for (const scope of ['openid', 'email', 'profile', 'groups']) assert.ok(meta.scopes_supported.includes(scope), scope);
  for (const claim of ['email', 'email_verified', 'groups']) assert.ok(meta.claims_supported.includes(claim), claim);
  assert.deepEqual(meta.code_challenge_methods_supported, ['S256']);
});

test('Chromium signs in at the OpenID provider; the code buys a token whose userinfo has email and groups', async () => {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authorize = new URL(`${idp.issuer}/auth`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: IDP_CLIENT_ID, redirect_uri: callback.url, scope: 'openid email profile groups', state: 'st-1', code_challenge: challenge, code_challenge_method: 'S256' })) {
    authorize.searchParams.set(k, v);
  }
  const page = await browser.newPage();
  try {
    await open(page, authorize);
    await page.waitForSelector(LOGIN_FORM.login);
    await page.fill(LOGIN_FORM.login, 'alice');
    await page.fill(LOGIN_FORM.password, 'any password');
    await page.click(LOGIN_FORM.submit);
    await page.waitForSelector(CONSENT_FORM.submit, { timeout: 15_000 });
    const reached = await followUntil(page, callback.url, () => page.click(CONSENT_FORM.submit, { noWaitAfter: true }));
    assert.equal(reached.searchParams.get('state'), 'st-1');
    assert.equal(reached.searchParams.get('iss'), idp.issuer);
    const { code } = await callback.next();
    assert.ok(code);

    const token = await fetch(`${idp.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${IDP_CLIENT_ID}:${IDP_CLIENT_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: callback.url, code_verifier: verifier }),
    });
    assert.equal(token.status, 200, await token.clone().text());
    const tokens = await token.json();
    assert.equal(tokens.token_type, 'Bearer');
    assert.ok(tokens.id_token);
    const idClaims = JSON.parse(Buffer.from(tokens.id_token.split('.')[1], 'base64url'));
    assert.equal(idClaims.sub, 'alice');
    assert.equal(idClaims.email, 'alice@example.com');

    const me = await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(me.status, 200);
    assert.deepEqual(await me.json(), { sub: 'alice', email: 'alice@example.com', email_verified: true, name: 'Alice Example', groups: ['admins', 'staff'] });
  } finally {
    await closePage(page);
  }
});

test('the browser helpers fill a page shaped as the contract\'s consent page and follow its redirect', async () => {
  // The contract's markup, served by a stand-in: POST answers 302 to the redirect URI.
  const posted = [];
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'set-cookie': 'mcp_edge_csrf=c1; Path=/; HttpOnly; SameSite=Lax' });
      res.end(`<!doctype html><title>Sign in</title><p id="client-name">Stand-in client</p><p id="redirect-host">127.0.0.1</p><p id="scopes"></p>
        <form method="post" action="/authorize" id="consent"><input type="hidden" name="request" value="r1"><input type="hidden" name="csrf" value="c1">
        <input id="username" name="username" autocomplete="username"><input id="password" name="password" type="password" autocomplete="current-password">
        <button id="allow" name="decision" value="allow">Allow</button><button id="deny" name="decision" value="deny">Deny</button></form>`);
      return;
    }
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      posted.push({ form: Object.fromEntries(new URLSearchParams(body)), cookie: req.headers.cookie });
      res.writeHead(302, { location: `${callback.url}?code=stand-in-code&state=s2` }).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const page = await browser.newPage();
  try {
    await open(page, `http://127.0.0.1:${server.address().port}/authorize?x=1`);
    let texts;
    const reached = await followUntil(page, callback.url, async () => {
      texts = await fillConsent(page, { username: 'alice', password: 'pw' });
    });
    assert.equal(texts['client-name'], 'Stand-in client');
    assert.equal(texts.error, null);
    assert.equal(reached.searchParams.get('code'), 'stand-in-code');
    assert.equal(posted.length, 1);
    assert.deepEqual(posted[0].form, { request: 'r1', csrf: 'c1', username: 'alice', password: 'pw', decision: 'allow' });
    // Cookies belong to a host, not a port: the provider's on 127.0.0.1 come along too.
    assert.match(posted[0].cookie, /(^|; )mcp_edge_csrf=c1(;|$)/);
    assert.deepEqual(await callback.next(), { code: 'stand-in-code', state: 's2' });
    assert.ok(existsSync(await screenshot(page, 'stand-in-callback')));
  } finally {
    await closePage(page);
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
});
