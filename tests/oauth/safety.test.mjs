// The authorization server's abuse cases, each answered with the RFC's error and never with a
// redirect to a URI that was not registered: PKCE, codes, redirect URIs, audiences, expiry,
// revocation, refresh-token reuse, Client ID Metadata Documents on private addresses, forged
// consent, bad registrations, registration modes, client deletion, and sign-in lockout.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { PASSWORDS, hidden, pkce, readConfig, registerClient, startOAuthWorker, tokenRequest } from './worker.mjs';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** The test configuration with a second OAuth server, a configured client and changes. */
function config(changes = {}) {
  const c = readConfig();
  c.oauth = { ...c.oauth, accessTokenTtlSeconds: 600, clients: [{ clientId: 'configured-app', secret: 'CONFIGURED_APP_SECRET', redirectUris: ['https://app.example/cb'], name: 'Configured app' }], ...changes };
  c.servers.push({ ...c.servers[0], route: '/other/mcp', name: 'other' });
  return c;
}

let w;
before(async () => {
  w = await startOAuthWorker({ config: config(), bindings: { CONFIGURED_APP_SECRET: 'configured-secret-1' } });
});
after(() => w?.close());

const html = (text, id) => text.match(new RegExp(`id="${id}"[^>]*>([^<]*)<`))?.[1];

/** `GET /authorize` with these parameters (a good request, changed by `changes`). */
async function authorize(origin, clientId, changes = {}, headers = {}) {
  const { verifier, challenge } = pkce();
  const params = { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'state-1', resource: `${origin}/mcp`, ...changes };
  for (const [k, v] of Object.entries(params)) if (v === undefined) delete params[k];
  const res = await fetch(new URL(`/authorize?${new URLSearchParams(params)}`, origin), { redirect: 'manual', headers });
  const body = await res.text();
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  return { res, body, cookie, verifier };
}

/** Posts the consent form of `page` (from `authorize`) as `fields` say. */
function consent(origin, page, fields = {}, headers = {}) {
  const form = new URLSearchParams({ request: hidden(page.body, 'request'), csrf: hidden(page.body, 'csrf'), username: 'alice', password: PASSWORDS.ALICE_PASSWORD, decision: 'allow', ...fields });
  for (const [k, v] of Object.entries(fields)) if (v === undefined) form.delete(k);
  return fetch(new URL('/authorize', origin), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie, origin, ...headers }, body: form });
}

/** A registered public client's code, its verifier, and the client. */
async function code(origin = w.origin, changes = {}) {
  const client = await registerClient(origin, { redirect_uris: [REDIRECT], client_name: 'Safety' });
  const page = await authorize(origin, client.client_id, changes);
  assert.equal(page.res.status, 200, page.body);
  const res = await consent(origin, page);
  assert.equal(res.status, 302);
  const location = new URL(res.headers.get('location'));
  return { client, code: location.searchParams.get('code'), verifier: page.verifier, location };
}

async function tokens(origin = w.origin) {
  const c = await code(origin);
  const r = await tokenRequest(origin, { grant_type: 'authorization_code', code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier, client_id: c.client.client_id, resource: `${origin}/mcp` });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { ...c, tokens: r.body };
}

const call = (origin, token, path = '/mcp') => fetch(new URL(path, origin), {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'safety', version: '1' } } }),
});

test('the good path: the code comes back with the state and the issuer, and its tokens work', async () => {
  const { location, tokens: t } = await tokens();
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
  assert.equal(location.searchParams.get('state'), 'state-1');
  assert.equal(location.searchParams.get('iss'), w.origin);
  assert.match(t.access_token, /^mcpe_at\./);
  assert.match(t.refresh_token, /^mcpe_rt\./);
  assert.deepEqual([t.token_type, t.expires_in], ['Bearer', 600]);
  assert.equal((await call(w.origin, t.access_token)).status, 200);
});

test('PKCE: a wrong verifier, a missing one, plain and a missing challenge are refused', async () => {
  const c = await code();
  const exchange = (verifier) => tokenRequest(w.origin, { grant_type: 'authorization_code', code: c.code, redirect_uri: REDIRECT, client_id: c.client.client_id, ...(verifier ? { code_verifier: verifier } : {}) });
  const wrong = await exchange(pkce().verifier);
  assert.deepEqual([wrong.status, wrong.body.error, wrong.body.error_description], [400, 'invalid_grant', 'code_verifier does not match the code_challenge']);
  const missing = await exchange(undefined);
  assert.deepEqual([missing.status, missing.body.error], [400, 'invalid_request']);
  // The right verifier still works: a failed attempt does not use the code up.
  assert.equal((await exchange(c.verifier)).status, 200);

  // A registered client's error goes back only if the person follows the page's link: before
  // anyone signed in, an automatic redirect would make this server an open redirector for
  // whatever URI anyone registered (RFC 9700 §4.11.2).
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  for (const changes of [{ code_challenge_method: 'plain' }, { code_challenge_method: undefined }, { code_challenge: undefined, code_challenge_method: undefined }]) {
    const page = await authorize(w.origin, client.client_id, changes);
    assert.equal(page.res.status, 400, JSON.stringify(changes));
    assert.equal(page.res.headers.get('location'), null);
    const link = page.body.match(/id="return" href="([^"]*)"/)?.[1]?.replace(/&amp;/g, '&');
    const to = new URL(link);
    assert.equal(`${to.origin}${to.pathname}`, REDIRECT);
    assert.deepEqual([to.searchParams.get('error'), to.searchParams.get('state'), to.searchParams.get('iss')], ['invalid_request', 'state-1', w.origin]);
    assert.match(page.body, /return to 127\.0\.0\.1:9/);
  }
  // A client the operator configured gets the error redirect at once.
  const configured = await authorize(w.origin, 'configured-app', { redirect_uri: 'https://app.example/cb', code_challenge_method: 'plain' });
  assert.equal(configured.res.status, 302);
  const to = new URL(configured.res.headers.get('location'));
  assert.deepEqual([`${to.origin}${to.pathname}`, to.searchParams.get('error')], ['https://app.example/cb', 'invalid_request']);
});

test('a code used twice is refused, and the tokens of its first use stop working', async () => {
  const c = await code();
  const form = { grant_type: 'authorization_code', code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier, client_id: c.client.client_id };
  const first = await tokenRequest(w.origin, form);
  assert.equal(first.status, 200);
  assert.equal((await call(w.origin, first.body.access_token)).status, 200);
  const second = await tokenRequest(w.origin, form);
  assert.deepEqual([second.status, second.body.error], [400, 'invalid_grant']);
  const after = await call(w.origin, first.body.access_token);
  assert.equal(after.status, 401);
  assert.match(after.headers.get('www-authenticate'), /error="invalid_token"/);
  const refresh = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: c.client.client_id });
  assert.deepEqual([refresh.status, refresh.body.error], [400, 'invalid_grant']);
});

test('an expired code and an expired access token are refused', async () => {
  const short = await startOAuthWorker({ config: config({ codeTtlSeconds: 1, accessTokenTtlSeconds: 1 }) });
  try {
    const c = await code(short.origin);
    await new Promise((r) => setTimeout(r, 1200));
    const late = await tokenRequest(short.origin, { grant_type: 'authorization_code', code: c.code, redirect_uri: REDIRECT, code_verifier: c.verifier, client_id: c.client.client_id });
    assert.deepEqual([late.status, late.body.error, late.body.error_description], [400, 'invalid_grant', 'the code has expired']);
    const t = await tokens(short.origin);
    assert.equal(t.tokens.expires_in, 1);
    await new Promise((r) => setTimeout(r, 1200));
    const res = await call(short.origin, t.tokens.access_token);
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate'), /error="invalid_token"/);
  } finally {
    await short.close();
  }
});

test('redirect URIs: an unregistered one and an open-redirect attempt get a page, never a redirect', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  for (const redirect_uri of ['https://evil.example/callback', 'http://127.0.0.1:9/callback/../evil', 'http://127.0.0.1:9/callback?next=https://evil.example', `${REDIRECT}#x`, 'http://localhost:9/callback']) {
    const page = await authorize(w.origin, client.client_id, { redirect_uri });
    assert.equal(page.res.status, 400, redirect_uri);
    assert.equal(page.res.headers.get('location'), null);
    assert.match(html(page.body, 'error'), /is not a redirect URI registered for this client/);
  }
  // Unknown clients and missing redirect URIs get the page too.
  for (const [id, changes] of [['no-such-client', {}], [client.client_id, { redirect_uri: undefined }]]) {
    const page = await authorize(w.origin, id, changes);
    assert.equal(page.res.status, 400);
    assert.equal(page.res.headers.get('location'), null);
  }
  // A loopback redirect may change its port, and nothing else.
  const other = await authorize(w.origin, client.client_id, { redirect_uri: 'http://127.0.0.1:54321/callback' });
  assert.equal(other.res.status, 200);
  // The code is bound to the redirect URI it was asked with.
  const c = await code();
  const wrong = await tokenRequest(w.origin, { grant_type: 'authorization_code', code: c.code, redirect_uri: 'http://127.0.0.1:10/callback', code_verifier: c.verifier, client_id: c.client.client_id });
  assert.deepEqual([wrong.status, wrong.body.error], [400, 'invalid_grant']);
});

test('a token is for the one MCP server it was issued for', async () => {
  const { tokens: t } = await tokens();
  assert.equal((await call(w.origin, t.access_token, '/mcp')).status, 200);
  const other = await call(w.origin, t.access_token, '/other/mcp');
  assert.equal(other.status, 401);
  assert.match(other.headers.get('www-authenticate'), /resource_metadata="[^"]*\/\.well-known\/oauth-protected-resource\/other\/mcp", error="invalid_token"/);
  // A resource that is not one of ours, at the authorization step.
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  for (const resource of ['https://evil.example/mcp', `${w.origin}/not-a-server`]) {
    const page = await authorize(w.origin, client.client_id, { resource });
    // A registered client's error: a page, with the way back as a link.
    const link = page.body.match(/id="return" href="([^"]*)"/)?.[1]?.replace(/&amp;/g, '&');
    assert.equal(new URL(link).searchParams.get('error'), 'invalid_target', resource);
  }
  // A token whose signature is not ours, or that was altered.
  const [prefix, body, mac] = t.access_token.split('.');
  const claims = JSON.parse(Buffer.from(body, 'base64url'));
  claims.aud = `${w.origin}/other/mcp`;
  const forged = `${prefix}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${mac}`;
  assert.equal((await call(w.origin, forged, '/other/mcp')).status, 401);
});

test('refresh tokens rotate; a reused one revokes the whole grant', async () => {
  const t = await tokens();
  const id = t.client.client_id;
  const first = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: t.tokens.refresh_token, client_id: id });
  assert.equal(first.status, 200);
  assert.notEqual(first.body.refresh_token, t.tokens.refresh_token);
  assert.equal((await call(w.origin, first.body.access_token)).status, 200);
  const reuse = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: t.tokens.refresh_token, client_id: id });
  assert.deepEqual([reuse.status, reuse.body.error, reuse.body.error_description], [400, 'invalid_grant', 'the refresh token was already used; the grant is revoked']);
  // The newest refresh token and every access token of the grant are dead too.
  const next = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: id });
  assert.deepEqual([next.status, next.body.error], [400, 'invalid_grant']);
  assert.equal((await call(w.origin, first.body.access_token)).status, 401);
  assert.equal((await call(w.origin, t.tokens.access_token)).status, 401);
  // Another client cannot use the refresh token.
  const u = await tokens();
  const stolen = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: u.tokens.refresh_token, client_id: id });
  assert.deepEqual([stolen.status, stolen.body.error], [400, 'invalid_grant']);
});

test('revocation (RFC 7009): either token ends the grant, and unknown tokens get 200', async () => {
  const revoke = (form) => fetch(new URL('/revoke', w.origin), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
  const a = await tokens();
  assert.equal((await revoke({ token: a.tokens.access_token, client_id: a.client.client_id })).status, 200);
  assert.equal((await call(w.origin, a.tokens.access_token)).status, 401);
  const refreshed = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: a.tokens.refresh_token, client_id: a.client.client_id });
  assert.deepEqual([refreshed.status, refreshed.body.error], [400, 'invalid_grant']);
  const b = await tokens();
  assert.equal((await revoke({ token: b.tokens.refresh_token, token_type_hint: 'refresh_token', client_id: b.client.client_id })).status, 200);
  assert.equal((await call(w.origin, b.tokens.access_token)).status, 401);
  // Another client's revocation of a token changes nothing; an unknown token is fine.
  const c = await tokens();
  assert.equal((await revoke({ token: c.tokens.refresh_token, client_id: a.client.client_id })).status, 200);
  assert.equal((await call(w.origin, c.tokens.access_token)).status, 200);
  assert.equal((await revoke({ token: 'nonsense', client_id: a.client.client_id })).status, 200);
  const anonymous = await revoke({ token: c.tokens.refresh_token });
  assert.equal(anonymous.status, 401);
  assert.equal((await anonymous.json()).error, 'invalid_client');
});

test('Client ID Metadata Documents: fetched, checked, their redirect URIs enforced; private addresses refused', async () => {
  let served = {};
  const docs = createServer((req, res) => {
    const doc = served[req.url];
    if (!doc) return res.writeHead(404).end();
    res.writeHead(doc.status ?? 200, { 'content-type': 'application/json', ...(doc.headers ?? {}) }).end(typeof doc.body === 'string' ? doc.body : JSON.stringify(doc.body));
  });
  await new Promise((r) => docs.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${docs.address().port}`;
  try {
    const id = `${base}/client.json`;
    served = { '/client.json': { body: { client_id: id, client_name: 'Metadata app', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' } } };
    const page = await authorize(w.origin, id);
    assert.equal(page.res.status, 200, page.body);
    assert.equal(html(page.body, 'client-name'), 'Metadata app');
    // Its name is its own, and the page says whose host vouches for it.
    assert.match(page.body, /<p class="who" id="vouched">This application is the one published at <strong>127\.0\.0\.1:\d+<\/strong>/);
    const res = await consent(w.origin, page);
    const code = new URL(res.headers.get('location')).searchParams.get('code');
    const t = await tokenRequest(w.origin, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: page.verifier, client_id: id });
    assert.equal(t.status, 200);
    assert.equal((await authorize(w.origin, id, { redirect_uri: 'https://evil.example/cb' })).res.status, 400);
    // A document that names another client, or that redirects elsewhere, is not a client.
    served['/liar.json'] = { body: { client_id: `${base}/other.json`, redirect_uris: [REDIRECT] } };
    served['/moved.json'] = { status: 302, headers: { location: '/client.json' }, body: '' };
    served['/huge.json'] = { body: { client_id: `${base}/huge.json`, redirect_uris: [REDIRECT], client_name: 'x'.repeat(20_000) } };
    for (const [path, why] of [['/liar.json', /not its own URL/], ['/moved.json', /HTTP 302/], ['/huge.json', /larger than/], ['/missing.json', /HTTP 404/]]) {
      const p = await authorize(w.origin, `${base}${path}`);
      assert.equal(p.res.status, 400, path);
      assert.match(html(p.body, 'error'), why, path);
    }
    // A metadata document on a private address, where the configuration does not allow it.
    const strict = await startOAuthWorker({ config: config({ privateHosts: [] }) });
    try {
      for (const url of [`https://127.0.0.1:${docs.address().port}/client.json`, 'https://10.0.0.1/client.json', 'https://169.254.169.254/latest/meta-data', 'https://localhost/client.json']) {
        const p = await authorize(strict.origin, url);
        assert.equal(p.res.status, 400, url);
        assert.equal(p.res.headers.get('location'), null);
        assert.match(html(p.body, 'error'), /could not be fetched|not registered/, url);
      }
      // Plain http is never a metadata document, except on a configured private host.
      const plain = await authorize(strict.origin, id);
      assert.equal(plain.res.status, 400);
    } finally {
      await strict.close();
    }
  } finally {
    docs.close();
  }
});

test('a forged consent POST gets a 403 page and no code', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  const page = await authorize(w.origin, client.client_id);
  const cases = [
    [{ csrf: undefined }, {}],
    [{ csrf: 'f'.repeat(64) }, {}],
    [{}, { cookie: 'mcp_edge_csrf=another-browser-cookie-value' }],
    [{}, { origin: 'https://evil.example' }],
  ];
  for (const [fields, headers] of cases) {
    const res = await consent(w.origin, page, fields, headers);
    assert.equal(res.status, 403, JSON.stringify([fields, headers]));
    assert.equal(res.headers.get('location'), null);
  }
  // An altered request is refused too.
  const altered = await consent(w.origin, { ...page, body: page.body.replace(/name="request" value="([^"]*)"/, (_, v) => `name="request" value="${v.replace(/^./, (c) => (c === 'e' ? 'f' : 'e'))}"`) });
  assert.equal(altered.status, 400);
  // The real form still works, and the page is never framed.
  assert.equal((await consent(w.origin, page)).status, 302);
  assert.match(page.res.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  assert.equal(page.res.headers.get('x-frame-options'), 'DENY');
});

test('registration: malformed and oversized bodies, and bad metadata, get RFC 7591 errors', async () => {
  const post = (body, type = 'application/json') => fetch(new URL('/register', w.origin), { method: 'POST', headers: { 'content-type': type }, body });
  const cases = [
    ['{not json', 400, 'invalid_client_metadata'],
    ['[]', 400, 'invalid_client_metadata'],
    [JSON.stringify({ client_name: 'no redirects' }), 400, 'invalid_redirect_uri'],
    [JSON.stringify({ redirect_uris: ['http://evil.example/cb'] }), 400, 'invalid_redirect_uri'],
    [JSON.stringify({ redirect_uris: ['javascript:alert(1)'] }), 400, 'invalid_redirect_uri'],
    [JSON.stringify({ redirect_uris: [REDIRECT], grant_types: ['client_credentials'] }), 400, 'invalid_client_metadata'],
    [JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'x'.repeat(20_000) }), 413, 'invalid_client_metadata'],
  ];
  for (const [body, status, error] of cases) {
    const res = await post(body);
    assert.equal(res.status, status, body.slice(0, 60));
    assert.equal((await res.json()).error, error, body.slice(0, 60));
  }
  assert.equal((await (await post('redirect_uris=x', 'application/x-www-form-urlencoded')).json()).error, 'invalid_client_metadata');
  // A confidential client: its secret works with Basic and post, and nothing else.
  const res = await post(JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' }));
  const confidential = await res.json();
  assert.equal(res.status, 201);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.ok(confidential.client_secret.length >= 40);
  const wrong = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: 'mcpe_rt.x', client_id: confidential.client_id, client_secret: 'wrong' });
  assert.deepEqual([wrong.status, wrong.body.error], [401, 'invalid_client']);
  const none = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: 'mcpe_rt.x', client_id: confidential.client_id });
  assert.deepEqual([none.status, none.body.error], [401, 'invalid_client']);
  const right = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: 'mcpe_rt.x', client_id: confidential.client_id, client_secret: confidential.client_secret });
  assert.deepEqual([right.status, right.body.error], [400, 'invalid_grant']);
  // The configured client authenticates with its secret from the Worker's secrets.
  const configured = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: 'mcpe_rt.x' }, { authorization: `Basic ${Buffer.from('configured-app:configured-secret-1').toString('base64')}` });
  assert.deepEqual([configured.status, configured.body.error], [400, 'invalid_grant']);
});

test('a deleted client gets invalid_client (401) at the token endpoint, and an error page at /authorize', async () => {
  const t = await tokens();
  const del = (token) => fetch(t.client.registration_client_uri, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  assert.equal((await del('not-the-token')).status, 401);
  assert.equal((await del(t.client.registration_access_token)).status, 204);
  const refresh = await tokenRequest(w.origin, { grant_type: 'refresh_token', refresh_token: t.tokens.refresh_token, client_id: t.client.client_id });
  assert.deepEqual([refresh.status, refresh.body.error], [401, 'invalid_client']);
  assert.match(refresh.headers.get('www-authenticate') ?? '', /^Basic/);
  const page = await authorize(w.origin, t.client.client_id);
  assert.equal(page.res.status, 400);
  assert.equal(page.res.headers.get('location'), null);
  // Its grants are revoked with it.
  assert.equal((await call(w.origin, t.tokens.access_token)).status, 401);
});

test('registration can be off, or need an initial access token', async () => {
  const off = await startOAuthWorker({ config: config({ registration: 'off' }) });
  try {
    const meta = await (await fetch(new URL('/.well-known/oauth-authorization-server', off.origin))).json();
    assert.equal(meta.registration_endpoint, undefined);
    const res = await fetch(new URL('/register', off.origin), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    assert.equal(res.status, 404);
  } finally {
    await off.close();
  }
  const gated = await startOAuthWorker({ config: config({ registration: 'token', initialAccessTokenSecret: 'REGISTRATION_TOKEN' }), bindings: { REGISTRATION_TOKEN: 'initial-token-9c2e' } });
  try {
    const register = (authorization) => fetch(new URL('/register', gated.origin), { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
    for (const auth of [undefined, 'Bearer wrong', 'Bearer initial-token-9c2']) {
      const res = await register(auth);
      assert.equal(res.status, 401, String(auth));
      assert.equal((await res.json()).error, 'invalid_token');
    }
    const ok = await register('Bearer initial-token-9c2e');
    assert.equal(ok.status, 201);
    // The operator deletes any client with the initial access token.
    const client = await ok.json();
    const del = await fetch(client.registration_client_uri, { method: 'DELETE', headers: { authorization: 'Bearer initial-token-9c2e' } });
    assert.equal(del.status, 204);
  } finally {
    await gated.close();
  }
});

test('wrong passwords are refused, and a username is locked after five', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  const page = await authorize(w.origin, client.client_id);
  for (let i = 0; i < 5; i++) {
    const res = await consent(w.origin, page, { username: 'bob', password: `guess-${i}` });
    assert.equal(res.status, 401);
    assert.equal(html(await res.text(), 'error'), 'Wrong username or password.');
  }
  const locked = await consent(w.origin, page, { username: 'bob', password: PASSWORDS.BOB_PASSWORD });
  assert.equal(locked.status, 401);
  assert.match(html(await locked.text(), 'error'), /Too many sign-in attempts for this user from here/);
  // Another user is not affected; an unknown user gets the same answer as a wrong password.
  const unknown = await consent(w.origin, page, { username: 'mallory', password: 'x' });
  assert.equal(html(await unknown.text(), 'error'), 'Wrong username or password.');
  assert.equal((await consent(w.origin, page)).status, 302);
});

test('deny sends the client access_denied; the metadata documents describe the server', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  const page = await authorize(w.origin, client.client_id);
  const res = await consent(w.origin, page, { decision: 'deny', username: undefined, password: undefined });
  const to = new URL(res.headers.get('location'));
  assert.deepEqual([to.searchParams.get('error'), to.searchParams.get('state'), to.searchParams.get('code')], ['access_denied', 'state-1', null]);
  const meta = await (await fetch(new URL('/.well-known/oauth-authorization-server', w.origin))).json();
  assert.deepEqual(
    [meta.issuer, meta.authorization_endpoint, meta.token_endpoint, meta.registration_endpoint, meta.revocation_endpoint, meta.code_challenge_methods_supported, meta.client_id_metadata_document_supported, meta.authorization_response_iss_parameter_supported],
    [w.origin, `${w.origin}/authorize`, `${w.origin}/token`, `${w.origin}/register`, `${w.origin}/revoke`, ['S256'], true, true],
  );
  const oidc = await (await fetch(new URL('/.well-known/openid-configuration', w.origin))).json();
  assert.equal(oidc.issuer, w.origin);
  assert.deepEqual(oidc.subject_types_supported, ['public']);
  const prm = await (await fetch(new URL('/.well-known/oauth-protected-resource/mcp', w.origin))).json();
  assert.deepEqual([prm.resource, prm.authorization_servers], [`${w.origin}/mcp`, [w.origin]]);
  const unauthorized = await fetch(new URL('/mcp', w.origin), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: '{}' });
  assert.equal(unauthorized.headers.get('www-authenticate'), `Bearer realm="mcp-edge", resource_metadata="${w.origin}/.well-known/oauth-protected-resource/mcp"`);
});

test('a password secret may hold the hash `mcp-edge hash-password` prints instead of the password', async () => {
  const { spawnSync } = await import('node:child_process');
  const { root } = await import('../e2e/harness.mjs');
  const out = spawnSync(process.execPath, ['cli/mcp-edge.mjs', 'hash-password'], { cwd: root, input: 'hashed-pw-81c4\n', encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const hash = out.stdout.trim();
  assert.match(hash, /^pbkdf2-sha256\$100000\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assert.doesNotMatch(out.stdout + out.stderr, /hashed-pw-81c4/);
  const hashed = await startOAuthWorker({ config: config(), bindings: { ALICE_PASSWORD: hash } });
  try {
    const client = await registerClient(hashed.origin, { redirect_uris: [REDIRECT] });
    const page = await authorize(hashed.origin, client.client_id);
    assert.equal((await consent(hashed.origin, page, { password: hash })).status, 401);
    const res = await consent(hashed.origin, page, { password: 'hashed-pw-81c4' });
    assert.equal(res.status, 302);
    assert.ok(new URL(res.headers.get('location')).searchParams.get('code'));
  } finally {
    await hashed.close();
  }
});

test('grants survive a restart; a user removed from the configuration ends theirs at the next refresh', async () => {
  const { freshPersistDir } = await import('../e2e/harness.mjs');
  const persist = freshPersistDir();
  const first = await startOAuthWorker({ config: config(), persist });
  let alice;
  let bob;
  try {
    alice = await tokens(first.origin);
    const client = await registerClient(first.origin, { redirect_uris: [REDIRECT] });
    const page = await authorize(first.origin, client.client_id);
    const res = await consent(first.origin, page, { username: 'bob', password: PASSWORDS.BOB_PASSWORD });
    const c = new URL(res.headers.get('location')).searchParams.get('code');
    const t = await tokenRequest(first.origin, { grant_type: 'authorization_code', code: c, redirect_uri: REDIRECT, code_verifier: page.verifier, client_id: client.client_id });
    bob = { client, tokens: t.body };
  } finally {
    await first.close();
  }
  // The same storage, a new runtime, and bob gone from the file. The stored signing key signs
  // on: alice's access token still works (on the new origin's port it is another server, so
  // refresh there) and her refresh token too.
  const without = config();
  without.oauth.signIn.users = without.oauth.signIn.users.filter((u) => u.username !== 'bob');
  const second = await startOAuthWorker({ config: without, persist });
  try {
    const refreshed = await tokenRequest(second.origin, { grant_type: 'refresh_token', refresh_token: alice.tokens.refresh_token, client_id: alice.client.client_id });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    const gone = await tokenRequest(second.origin, { grant_type: 'refresh_token', refresh_token: bob.tokens.refresh_token, client_id: bob.client.client_id });
    assert.deepEqual([gone.status, gone.body.error, gone.body.error_description], [400, 'invalid_grant', 'the user no longer exists; sign in again']);
    const again = await tokenRequest(second.origin, { grant_type: 'refresh_token', refresh_token: bob.tokens.refresh_token, client_id: bob.client.client_id });
    assert.equal(again.body.error, 'invalid_grant');
  } finally {
    await second.close();
  }
});

test('consent is remembered per client, user and MCP server; a trailing slash names the same server', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  const page = await authorize(w.origin, client.client_id);
  const allowed = await consent(w.origin, page);
  assert.equal(allowed.status, 302);
  const signedIn = allowed.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  assert.match(signedIn, /^mcp_edge_signin=/);
  // Signed in, the same client and server: straight back with a code.
  const again = await authorize(w.origin, client.client_id, {}, { cookie: signedIn });
  assert.equal(again.res.status, 302);
  assert.ok(new URL(again.res.headers.get('location')).searchParams.get('code'));
  // Another server: the consent page, signed in, without a password field.
  const other = await authorize(w.origin, client.client_id, { resource: `${w.origin}/other/mcp` }, { cookie: signedIn });
  assert.equal(other.res.status, 200);
  assert.doesNotMatch(other.body, /id="password"/);
  assert.equal(html(other.body, 'signed-in'), 'Signed in as alice@example.com');
  // `…/mcp/` is `…/mcp`, at /authorize and at /token alike.
  const slash = await authorize(w.origin, client.client_id, { resource: `${w.origin}/mcp/` }, { cookie: signedIn });
  const code = new URL(slash.res.headers.get('location')).searchParams.get('code');
  const t = await tokenRequest(w.origin, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: slash.verifier, client_id: client.client_id, resource: `${w.origin}/mcp/` });
  assert.equal(t.status, 200, JSON.stringify(t.body));
});

test('the OpenID discovery document names an empty key set; the authorization server can be rate-limited', async () => {
  const oidc = await (await fetch(new URL('/.well-known/openid-configuration', w.origin))).json();
  assert.equal(oidc.jwks_uri, `${w.origin}/.well-known/jwks.json`);
  assert.deepEqual(await (await fetch(oidc.jwks_uri)).json(), { keys: [] });
  // The harness's TEST_RATE_LIMITER allows 5 a minute.
  const limited = await startOAuthWorker({ config: config({ rateLimit: { binding: 'TEST_RATE_LIMITER', periodSeconds: 60 } }) });
  try {
    const statuses = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(new URL('/register', limited.origin), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
      statuses.push(res.status);
      if (res.status === 429) assert.equal(res.headers.get('retry-after'), '60');
    }
    assert.deepEqual(statuses, [201, 201, 201, 201, 201, 429]);
    // Reading the metadata is not counted.
    assert.equal((await fetch(new URL('/.well-known/oauth-authorization-server', limited.origin))).status, 200);
  } finally {
    await limited.close();
  }
});

test('a client from the configuration signs in with its redirect URI and authenticates with its secret', async () => {
  const page = await authorize(w.origin, 'configured-app', { redirect_uri: 'https://app.example/cb' });
  assert.equal(page.res.status, 200);
  assert.equal(html(page.body, 'client-name'), 'Configured app');
  assert.equal(html(page.body, 'redirect-host'), 'app.example');
  assert.match(page.res.headers.get('content-security-policy'), /form-action 'self' https:\/\/app\.example;/);
  const res = await consent(w.origin, page);
  const to = new URL(res.headers.get('location'));
  assert.equal(`${to.origin}${to.pathname}`, 'https://app.example/cb');
  const form = { grant_type: 'authorization_code', code: to.searchParams.get('code'), redirect_uri: 'https://app.example/cb', code_verifier: page.verifier };
  const basic = (secret) => ({ authorization: `Basic ${Buffer.from(`configured-app:${secret}`).toString('base64')}` });
  const wrong = await tokenRequest(w.origin, form, basic('configured-secret-2'));
  assert.deepEqual([wrong.status, wrong.body.error], [401, 'invalid_client']);
  const right = await tokenRequest(w.origin, form, basic('configured-secret-1'));
  assert.equal(right.status, 200, JSON.stringify(right.body));
  assert.equal((await call(w.origin, right.body.access_token)).status, 200);
});
