// Signing in to the console, end to end: the test worker in workerd (Miniflare) as its own
// authorization server with configured users (alice: admin, bob: no role, carol: staff), a real
// upstream, and Chromium. A public console: the page's "Sign in" goes through /authorize and back,
// alice then sees every tool, the configuration and health sections, and calls a server with
// `auth.oauth` from "Try a tool" without pasting a token; signing out revokes the sign-in, so
// its cookie is worth nothing afterwards. A `signed-in` console with the role staff: nobody
// signed in gets the sign-in page (401), bob is refused (403), carol sees it without the admin
// parts. And the abuse cases, by plain HTTP: forged and foreign cookies, the console's client at
// /token or with another redirect URI or resource, a callback this browser did not start, forms
// from other sites, a non-admin on the admin API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closePage, launchBrowser, open, fillConsent, followUntil, screenshot } from '../oauth/browser.mjs';
import { PASSWORDS, pkce, readConfig, startOAuthWorker } from '../oauth/worker.mjs';
import { freshPersistDir, startMiniflare } from '../e2e/harness.mjs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CAROL_PASSWORD = 'carol-pw-91c2d0';

function config(console) {
  const c = readConfig();
  c.oauth.signIn.users.push({ username: 'carol', passwordSecret: 'CAROL_PASSWORD', roles: ['staff'], email: 'carol@example.com' });
  // Long enough for a browser test's steps; the e2e default (2 s) would expire mid-call.
  c.oauth.accessTokenTtlSeconds = 300;
  c.servers.push({ route: '/open/mcp', name: 'open', version: '1', tools: [{ name: 'ping', http: { url: '{+env.UPSTREAM_URL}/echo' } }] });
  return { ...c, console };
}

let browser;
let publicWorker;
let staffWorker;
before(async () => {
  browser = await launchBrowser();
  publicWorker = await startOAuthWorker({ config: config({ access: 'public' }), bindings: { CAROL_PASSWORD } });
  staffWorker = await startOAuthWorker({ config: config({ access: 'signed-in', roles: ['staff'] }), bindings: { CAROL_PASSWORD } });
});
after(async () => {
  await browser?.close();
  await publicWorker?.close();
  await staffWorker?.close();
});

/** A new tab that records console errors and requests to other origins. */
async function tab(origin) {
  const page = await browser.newPage();
  const seen = { errors: [], foreign: [] };
  page.on('console', (m) => m.type() === 'error' && seen.errors.push(m.text()));
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('request', (r) => !r.url().startsWith(origin) && !r.url().startsWith('data:') && seen.foreign.push(r.url()));
  return { page, seen };
}

/** Runs `action` and waits until the tab has come back to the console's page and loaded it
 *  (sign-in and sign-out end on a page of their own that moves on to `/`). */
async function landHome(page, origin, action) {
  const home = page.waitForResponse((r) => r.url() === `${origin}/` && r.request().isNavigationRequest() && r.request().method() === 'GET', { timeout: 30_000 });
  await action();
  const res = await home;
  await page.waitForURL(`${origin}/`, { waitUntil: 'load' });
  return res;
}

/** Signs in through the page's "Sign in" link as `username`; ends back on the console. */
async function signIn(page, origin, username, password) {
  await open(page, `${origin}/`);
  await followUntil(page, `${origin}/authorize`, () => page.click('a.button[href="/console/signin"]'));
  await fillConsent(page, { username, password, decision: null });
  return landHome(page, origin, () => page.click('#allow'));
}

/** The console's session cookie in this browser, as a `Cookie` header. */
async function consoleCookie(origin) {
  const found = (await browser.context.cookies(origin)).find((c) => c.name === 'mcp_edge_console');
  return found && `mcp_edge_console=${found.value}`;
}

test('a public console: sign in as an admin, see everything, try an OAuth server, sign out for good', async () => {
  const origin = publicWorker.origin;
  const { page, seen } = await tab(origin);
  try {
    await open(page, `${origin}/`);
    assert.equal(await page.locator('#admin').count(), 0);
    assert.equal(await page.locator('script[src^="/console-admin."]').count(), 0);
    assert.match(await page.locator('#server-0 .locked').textContent(), /needs credentials/);

    await signIn(page, origin, 'alice', PASSWORDS.ALICE_PASSWORD);
    assert.match(await page.locator('.account').textContent(), /Signed in as alice@example\.com\s*admin/);
    // The admin's parts: the configuration's version and the health figures, and their script.
    assert.match(await page.locator('#admin').textContent(), /version 0.*the bundled configuration file/s);
    await page.locator('#health').waitFor();
    assert.equal(await page.locator('script[src^="/console-admin."]').count(), 1);
    // Every tool of the server with auth, the admin's own included.
    const tools = await page.locator('#server-0 article.tool h4 code').allTextContents();
    assert.deepEqual(tools, ['echo', 'admin_echo']);
    // Still a server that needs credentials: the admin sees its tools, clients still sign in.
    assert.equal(await page.locator('#server-0 .badge.lock').textContent(), 'needs credentials');
    await screenshot(page, 'console-signed-in-admin');

    // "Try a tool" on the server with auth.oauth: no token pasted, the console's sign-in serves.
    const panel = page.locator('div.try[data-route="/mcp"]');
    await panel.locator('button.connect').click();
    await panel.locator('p.status', { hasText: /^(Connected|Not connected)/ }).waitFor();
    assert.match(await panel.locator('p.status').textContent(), /^Connected/);
    const options = await panel.locator('select.tool option').allTextContents();
    assert.ok(options.some((o) => /admin_echo/.test(o)), `alice's tools/list: ${options}`);

    const cookie = await consoleCookie(origin);
    assert.ok(cookie, 'the session cookie is set');
    const cookies = await browser.context.cookies(origin);
    const session = cookies.find((c) => c.name === 'mcp_edge_console');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');

    await landHome(page, origin, () => page.click('.account button'));
    await page.locator('a.button[href="/console/signin"]').waitFor();
    assert.equal(await page.locator('#admin').count(), 0);
    // Signing out revoked the grant: the old cookie, replayed, signs no one in.
    const replayed = await fetch(`${origin}/`, { headers: { cookie } });
    const html = await replayed.text();
    assert.equal(replayed.status, 200);
    assert.doesNotMatch(html, /Signed in as/);
    assert.doesNotMatch(html, /id="admin"/);
    const api = await fetch(`${origin}/admin/api/servers`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } });
    assert.equal(api.status, 401);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(seen.foreign, []);
  } finally {
    await closePage(page);
    await browser.context.clearCookies();
  }
});

test('a signed-in console with a role: the sign-in page for strangers, 403 without the role, the page with it', async () => {
  const origin = staffWorker.origin;
  const { page, seen } = await tab(origin);
  try {
    const res = await open(page, `${origin}/`);
    assert.equal(res.status(), 401);
    assert.match(await page.locator('section.gate').textContent(), /for signed-in people only/);
    assert.equal(await page.locator('.try').count(), 0);
    await screenshot(page, 'console-sign-in-required');

    await followUntil(page, `${origin}/authorize`, () => page.click('section.gate a.button'));
    await fillConsent(page, { username: 'bob', password: PASSWORDS.BOB_PASSWORD, decision: null });
    const refused = await landHome(page, origin, () => page.click('#allow'));
    assert.equal(refused.status(), 403);
    assert.match(await page.locator('section.gate').textContent(), /signed in as bob@example\.com, who may not see it: it needs the role staff or admin/);
    await screenshot(page, 'console-role-refused');
    await landHome(page, origin, () => page.click('section.gate button'));

    await signIn(page, origin, 'carol', CAROL_PASSWORD);
    assert.match(await page.locator('.account').textContent(), /Signed in as carol@example\.com/);
    assert.doesNotMatch(await page.locator('.account').textContent(), /admin/);
    assert.equal(await page.locator('#admin').count(), 0);
    // Carol may use the server with auth: its tools show, but not the admins' one.
    assert.deepEqual(await page.locator('#server-0 article.tool h4 code').allTextContents(), ['echo']);
    await screenshot(page, 'console-signed-in-staff');
    // And she is no admin to the admin API.
    const cookie = await consoleCookie(origin);
    const api = await fetch(`${origin}/admin/api/servers`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } });
    assert.equal(api.status, 403);
    assert.match((await api.json()).error.message, /does not have the admin role/);
    // Chromium reports the 401 and 403 pages themselves; nothing else may go wrong.
    assert.deepEqual(seen.errors.filter((e) => !/status of 40[13] \((Unauthorized|Forbidden)\)$/.test(e)), []);
    // The first visit, bob's, his sign-out's, and carol's first visit.
    assert.equal(seen.errors.length, 4, seen.errors.join('\n'));
    assert.deepEqual(seen.foreign, []);
  } finally {
    await closePage(page);
    await browser.context.clearCookies();
  }
});

/** Signs in by plain HTTP (the same steps as the browser); returns the session's `Cookie` header. */
async function signInByHttp(origin, username, password) {
  const start = await fetch(`${origin}/console/signin`, { redirect: 'manual' });
  assert.equal(start.status, 302);
  const login = start.headers.getSetCookie()[0].split(';')[0];
  const authorize = await fetch(start.headers.get('location'), { redirect: 'manual' });
  const body = await authorize.text();
  const field = (n) => body.match(new RegExp(`name="${n}" value="([^"]*)"`))[1].replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  const csrf = authorize.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const allowed = await fetch(`${origin}/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrf, origin },
    body: new URLSearchParams({ request: field('request'), csrf: field('csrf'), decision: 'allow', username, password }),
  });
  assert.equal(allowed.status, 302);
  const back = allowed.headers.get('location');
  assert.ok(back.startsWith(`${origin}/console/callback?`), back);
  const done = await fetch(back, { headers: { cookie: login } });
  assert.equal(done.status, 200);
  return { cookie: done.headers.getSetCookie().find((c) => c.startsWith('mcp_edge_console='))?.split(';')[0], back, login };
}

test('abuse: forged cookies, foreign origins, the console client elsewhere, a callback not started here', async () => {
  const origin = publicWorker.origin;
  const alice = await signInByHttp(origin, 'alice', PASSWORDS.ALICE_PASSWORD);
  assert.match(alice.cookie, /^mcp_edge_console=.+/);
  const page = async (cookie) => (await fetch(`${origin}/`, { headers: { cookie } })).text();
  assert.match(await page(alice.cookie), /Signed in as <strong>alice@example\.com<\/strong>/);

  // A forged or altered cookie signs no one in.
  const value = alice.cookie.split('=')[1];
  const altered = `mcp_edge_console=${value.slice(0, -2)}${value.endsWith('a') ? 'bb' : 'aa'}`;
  assert.doesNotMatch(await page(altered), /Signed in as/);
  assert.doesNotMatch(await page('mcp_edge_console=not-a-session'), /Signed in as/);

  // The cookie works for the console's own requests only.
  const foreign = await fetch(`${origin}/admin/api/servers`, { headers: { cookie: alice.cookie, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
  assert.equal(foreign.status, 403);
  const unmarked = await fetch(`${origin}/admin/api/servers`, { headers: { cookie: alice.cookie } });
  assert.equal(unmarked.status, 403);
  const own = await fetch(`${origin}/admin/api/servers`, { headers: { cookie: alice.cookie, 'sec-fetch-site': 'same-origin' } });
  assert.equal(own.status, 200);
  await own.body?.cancel();

  // Tokens for "Try a tool": for the signed-in person, from the console only, for our servers.
  const token = (body, headers = {}) => fetch(`${origin}/console/token`, { method: 'POST', headers: { 'content-type': 'application/json', origin, cookie: alice.cookie, ...headers }, body: JSON.stringify(body) });
  const minted = await token({ route: '/mcp' });
  assert.equal(minted.status, 200);
  const { access_token: accessToken } = await minted.json();
  const list = await fetch(`${origin}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${accessToken}`, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  assert.equal(list.status, 200);
  await list.body?.cancel();
  assert.equal((await token({ route: '/mcp' }, { origin: 'https://evil.example' })).status, 401);
  assert.equal((await token({ route: '/mcp' }, { cookie: '' })).status, 401);
  assert.equal((await token({ route: '/open/mcp' })).status, 404);
  assert.equal((await token({ route: '/nowhere' })).status, 404);

  // The console's client has no token endpoint: its codes are exchanged by the Worker.
  const atToken = await fetch(`${origin}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'authorization_code', client_id: 'mcp-edge-console', code: 'mcpe_ac.x', code_verifier: pkce().verifier, redirect_uri: `${origin}/console/callback` }) });
  assert.equal(atToken.status, 401);
  assert.equal((await atToken.json()).error, 'invalid_client');
  // It is sent back to the console's callback only, and signs in to the console only.
  const { challenge } = pkce();
  const authorize = (params) => fetch(`${origin}/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'mcp-edge-console', code_challenge: challenge, code_challenge_method: 'S256', state: 's', ...params })}`, { redirect: 'manual' });
  const elsewhere = await authorize({ redirect_uri: 'https://evil.example/cb' });
  assert.equal(elsewhere.status, 400);
  assert.match(await elsewhere.text(), /not a redirect URI registered for this client/);
  const otherResource = await authorize({ redirect_uri: `${origin}/console/callback`, resource: `${origin}/mcp` });
  assert.equal(otherResource.status, 302);
  assert.equal(new URL(otherResource.headers.get('location')).searchParams.get('error'), 'invalid_target');

  // Forms from other sites do nothing: no forced sign-out, no sign-in with the admin token.
  const signout = await fetch(`${origin}/console/signout`, { method: 'POST', headers: { cookie: alice.cookie, origin: 'https://evil.example' }, redirect: 'manual' });
  assert.equal(signout.status, 403);
  assert.match(await page(alice.cookie), /Signed in as/);
  const tokenForm = await fetch(`${origin}/console/signin`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: 'token=anything' });
  assert.equal(tokenForm.status, 404);
  assert.match(await tokenForm.text(), /No admin token is set/);
  assert.equal((await fetch(`${origin}/console/signout`)).status, 405);
  // A callback this browser did not start (no login cookie, or another sign-in's) is refused.
  const replay = await fetch(alice.back);
  assert.equal(replay.status, 400);
  assert.match(await replay.text(), /not started in this browser/);
  const reused = await fetch(alice.back, { headers: { cookie: alice.login } });
  assert.equal(reused.status, 400);
  assert.match(await reused.text(), /Sign-in did not complete: the code was already used/);
  // A code used twice revokes what its first use gave (RFC 9700 §4.5): alice's sign-in ends.
  assert.doesNotMatch(await page(alice.cookie), /Signed in as/);
  const error = await fetch(`${origin}/console/callback?error=access_denied&error_description=${encodeURIComponent('<b>denied</b>')}`);
  assert.equal(error.status, 400);
  assert.match(await error.text(), /Sign-in did not complete: &lt;b&gt;denied&lt;\/b&gt;/);

});

test('an admin-token sign-in: only with the token, and it ends when the token changes', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-console-')), 'mcp-edge.json');
  writeFileSync(file, JSON.stringify({ servers: [{ route: '/mcp', name: 'plain', version: '1', tools: [] }] }));
  const persist = freshPersistDir();
  const signInWith = (origin, token, from = origin) => fetch(`${origin}/console/signin`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: from }, body: new URLSearchParams({ token }) });
  const first = await startMiniflare({ config: file, persist, bindings: { MCP_EDGE_ADMIN_TOKEN: 'first-admin-token-0a1b-5e7c9d2f41a8b6e3' } });
  let cookie;
  try {
    const origin = first.url.origin;
    const wrong = await signInWith(origin, 'first-admin-token-0a1c');
    assert.equal(wrong.status, 401);
    assert.deepEqual(wrong.headers.getSetCookie(), []);
    assert.match(await wrong.text(), /That is not the admin token\./);
    const foreign = await signInWith(origin, 'first-admin-token-0a1b-5e7c9d2f41a8b6e3', 'https://evil.example');
    assert.equal(foreign.status, 403);
    assert.deepEqual(foreign.headers.getSetCookie(), []);
    const right = await signInWith(origin, 'first-admin-token-0a1b-5e7c9d2f41a8b6e3');
    assert.equal(right.status, 200);
    cookie = right.headers.getSetCookie().find((c) => c.startsWith('mcp_edge_console=')).split(';')[0];
    const page = await (await fetch(`${origin}/`, { headers: { cookie } })).text();
    assert.match(page, /Signed in as <strong>operator<\/strong> <span class="badge admin">admin<\/span>/);
    assert.match(page, /id="admin"/);
    // No access token for an admin-token sign-in: it is nobody on an MCP server.
    const token = await fetch(`${origin}/console/token`, { method: 'POST', headers: { cookie, origin, 'content-type': 'application/json' }, body: '{"route":"/mcp"}' });
    assert.equal(token.status, 403);
  } finally {
    await first.mf.dispose();
  }
  // Restarted on the same storage (the same signing key): still signed in with the same token...
  const again = await startMiniflare({ config: file, persist, bindings: { MCP_EDGE_ADMIN_TOKEN: 'first-admin-token-0a1b-5e7c9d2f41a8b6e3' } });
  try {
    assert.match(await (await fetch(`${again.url.origin}/`, { headers: { cookie } })).text(), /Signed in as/);
  } finally {
    await again.mf.dispose();
  }
  // ...but with another admin token, the old sign-in is void.
  const second = await startMiniflare({ config: file, persist, bindings: { MCP_EDGE_ADMIN_TOKEN: 'second-admin-token-9f8e-2b6d0c4a71e3f958' } });
  try {
    const page = await (await fetch(`${second.url.origin}/`, { headers: { cookie } })).text();
    assert.doesNotMatch(page, /Signed in as/);
    const api = await fetch(`${second.url.origin}/admin/api/servers`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } });
    assert.equal(api.status, 401);
  } finally {
    await second.mf.dispose();
  }
});
