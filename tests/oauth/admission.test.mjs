// Admission limits that hold under concurrency (issue 38, findings 7 and 8): password attempts
// are checked and counted in one command before the password is derived, per username and
// address (per known device for a browser that signed in before), so N attempts at once get 5
// checks and an attacker cannot lock a user out of their own browser; and the built-in
// per-address limit covers `/authorize`, `/register`, `/token`, the sign-in form and the admin
// API. Requests as Cloudflare's edge would pass them (`CF-Connecting-IP`, a hostname without a
// local port) come from `request()` below; the local run's one address, from plain fetches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { PASSWORDS, hidden, pkce, readConfig, registerClient, startOAuthWorker } from './worker.mjs';

const REDIRECT = 'http://127.0.0.1:9/callback';
const HOST = 'mcp.example.test';

/** A request to the worker on `port` as the edge passes it on: `Host` without a port, and the
 *  client's address in `CF-Connecting-IP`. */
function request(port, { method = 'GET', path, address, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent: false, headers: { host: HOST, 'cf-connecting-ip': address, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const cookies = (headers) => (headers['set-cookie'] ?? []).map((c) => c.split(';')[0]);

/** The consent page for a new client, fetched as `address` with `cookie`. */
async function consentPage(port, clientId, address, cookie = '') {
  const { challenge } = pkce();
  const params = { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: `http://${HOST}/mcp` };
  const page = await request(port, { path: `/authorize?${new URLSearchParams(params)}`, address, headers: cookie ? { cookie } : {} });
  assert.equal(page.status, 200, page.body);
  return { page, cookie: [cookie, ...cookies(page.headers)].filter(Boolean).join('; ') };
}

/** Posts `password` for `username` on a fresh consent page, as `address` with `cookie`. */
async function attempt(port, clientId, { username = 'alice', password, address, cookie = '' }) {
  const { page, cookie: jar } = await consentPage(port, clientId, address, cookie);
  const form = new URLSearchParams({ request: hidden(page.body, 'request'), csrf: hidden(page.body, 'csrf'), username, password, decision: 'allow' });
  const res = await request(port, { method: 'POST', path: '/authorize', address, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar, origin: `http://${HOST}` }, body: form.toString() });
  const said = res.body.match(/id="error" role="alert">([^<]*)</)?.[1];
  return { status: res.status, said, cookies: cookies(res.headers), jar };
}

/** A worker as the edge runs it: the launcher's local marker unset. */
function edgeWorker(admission = { requests: 100000, registrationsPerHour: 100000 }) {
  return startOAuthWorker({ config: { ...readConfig(), admission }, bindings: { MCP_EDGE_LOCAL: '' } });
}

test('50 wrong passwords at once: 5 are checked, the rest refused before any is derived', async () => {
  const w = await startOAuthWorker();
  try {
    const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
    // Through the local run's one address: the pages first, then all the POSTs at once.
    const pages = await Promise.all(Array.from({ length: 50 }, async () => {
      const params = { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: `${w.origin}/mcp` };
      const res = await fetch(new URL(`/authorize?${new URLSearchParams(params)}`, w.origin));
      return { body: await res.text(), cookie: res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ') };
    }));
    const answers = await Promise.all(pages.map(async ({ body, cookie }) => {
      const form = new URLSearchParams({ request: hidden(body, 'request'), csrf: hidden(body, 'csrf'), username: 'alice', password: 'wrong', decision: 'allow' });
      const res = await fetch(new URL('/authorize', w.origin), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: w.origin }, body: form });
      return (await res.text()).match(/id="error" role="alert">([^<]*)</)?.[1];
    }));
    const checked = answers.filter((a) => a === 'Wrong username or password.').length;
    const refused = answers.filter((a) => a?.startsWith('Too many sign-in attempts for this user from here.')).length;
    assert.deepEqual([checked, refused], [5, 45], JSON.stringify(answers));
    // The right password from here now waits too.
    const { body, cookie } = pages[0];
    const page = await fetch(new URL(`/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: `${w.origin}/mcp` })}`, w.origin));
    const fresh = await page.text();
    const form = new URLSearchParams({ request: hidden(fresh, 'request'), csrf: hidden(fresh, 'csrf'), username: 'alice', password: PASSWORDS.ALICE_PASSWORD, decision: 'allow' });
    const jar = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ') || cookie;
    const right = await fetch(new URL('/authorize', w.origin), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar, origin: w.origin }, body: form });
    assert.equal(right.status, 401);
    assert.match(await right.text(), /Too many sign-in attempts for this user from here/);
    assert.ok(body, 'the pages were served');
  } finally {
    await w.close();
  }
});

test("an attacker's failures lock only the attacker out: other addresses, and the user's own browser, still sign in", async () => {
  const w = await edgeWorker();
  try {
    const port = Number(w.url.port);
    const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
    // Alice signs in once from her laptop: the browser is known to her username from now on.
    const first = await attempt(port, client.client_id, { password: PASSWORDS.ALICE_PASSWORD, address: '198.51.100.2' });
    assert.equal(first.status, 302, first.said);
    const device = first.cookies.find((c) => c.startsWith('mcp_edge_device='));
    assert.ok(device, 'the browser is marked as one alice signed in on');
    // An attacker guesses from seven addresses: each gets five checks, and the username's budget
    // for unknown browsers (30, of which alice's own first sign-in took one) runs out on the way.
    const attackers = ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4', '203.0.113.5', '203.0.113.6', '203.0.113.7'];
    const said = [];
    for (const address of attackers) {
      for (let i = 0; i < 6; i++) said.push((await attempt(port, client.client_id, { password: `guess-${i}`, address })).said);
    }
    assert.equal(said.filter((s) => s === 'Wrong username or password.').length, 29);
    // A new browser on a new address now waits as well…
    const stranger = await attempt(port, client.client_id, { password: PASSWORDS.ALICE_PASSWORD, address: '192.0.2.44' });
    assert.match(stranger.said, /^Too many sign-in attempts/);
    // …but alice's own browser, wherever it is, signs in with her password.
    const laptop = await attempt(port, client.client_id, { password: PASSWORDS.ALICE_PASSWORD, address: '192.0.2.45', cookie: device });
    assert.equal(laptop.status, 302, laptop.said);
    // And bob, on an attacker's address, is not locked out by alice's failures.
    const bob = await attempt(port, client.client_id, { username: 'bob', password: PASSWORDS.BOB_PASSWORD, address: '203.0.113.1' });
    assert.equal(bob.status, 302, bob.said);
  } finally {
    await w.close();
  }
});

test('the per-address limit covers /authorize, /register, /token, /revoke and the admin API, and answers each in its own shape', async () => {
  const w = await edgeWorker({ requests: 3, periodSeconds: 60, registrationsPerHour: 1 });
  try {
    const port = Number(w.url.port);
    const register = (address) =>
      request(port, { method: 'POST', path: '/register', address, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
    const registered = await register('203.0.113.9');
    assert.equal(registered.status, 201, registered.body);
    const clientId = JSON.parse(registered.body).client_id;
    // Registrations have an hourly budget of their own within the address's (a refused request
    // takes nothing from either).
    const again = await register('203.0.113.9');
    assert.equal(again.status, 429);
    assert.equal(JSON.parse(again.body).error, 'temporarily_unavailable');
    assert.ok(Number(again.headers['retry-after']) > 0);
    // GET /authorize: the address's second and third requests, then a page that says why not.
    const params = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    assert.equal((await request(port, { path: `/authorize?${params}`, address: '203.0.113.9' })).status, 200);
    assert.equal((await request(port, { path: `/authorize?${params}`, address: '203.0.113.9' })).status, 200);
    const page = await request(port, { path: `/authorize?${params}`, address: '203.0.113.9' });
    assert.equal(page.status, 429);
    assert.match(page.body, /too many requests from this address/i);
    const token = await request(port, { method: 'POST', path: '/token', address: '203.0.113.9', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token&refresh_token=x' });
    assert.equal(token.status, 429);
    assert.equal(JSON.parse(token.body).error, 'temporarily_unavailable');
    // The admin API, with a made-up token: counted before the token is looked at.
    const admin = await request(port, { path: '/admin/api/servers', address: '203.0.113.9', headers: { authorization: 'Bearer guess' } });
    assert.equal(admin.status, 429);
    assert.equal(JSON.parse(admin.body).error.code, 'too_many_requests');
    // Another address has all of its own; the metadata documents are never counted.
    assert.equal((await request(port, { path: `/authorize?${params}`, address: '203.0.113.10' })).status, 200);
    assert.equal((await request(port, { path: '/.well-known/oauth-authorization-server', address: '203.0.113.9' })).status, 200);
  } finally {
    await w.close();
  }
});

test("a list of revocations that cannot be read denies no one: each isolate goes on with the one it has", async () => {
  // Test builds make the objects MCP_EDGE_TEST_FAILING_OBJECTS names fail, as a store that is down.
  const w = await startOAuthWorker({ bindings: { MCP_EDGE_TEST_FAILING_OBJECTS: 'oauth-revocations' } });
  try {
    const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
    const { verifier, challenge } = pkce();
    const params = { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: `${w.origin}/mcp` };
    const page = await fetch(new URL(`/authorize?${new URLSearchParams(params)}`, w.origin));
    const body = await page.text();
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const form = new URLSearchParams({ request: hidden(body, 'request'), csrf: hidden(body, 'csrf'), username: 'alice', password: PASSWORDS.ALICE_PASSWORD, decision: 'allow' });
    const consent = await fetch(new URL('/authorize', w.origin), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: w.origin }, body: form });
    const code = new URL(consent.headers.get('location')).searchParams.get('code');
    const tokens = await fetch(new URL('/token', w.origin), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: client.client_id }) });
    const { access_token } = await tokens.json();
    // The isolate's first signed-in request reads the list of revocations, which fails: the
    // request is served all the same, and so is the next.
    for (let i = 0; i < 2; i++) {
      const res = await fetch(w.mcpUrl, { method: 'POST', headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) });
      assert.equal(res.status, 200, await res.text());
    }
    assert.ok(w.logs.some((l) => l.includes('the list of revoked grants could not be read')), 'and the operator is told');
  } finally {
    await w.close();
  }
});
