// Auth per server (issue 6): static tokens from secrets in a bearer or API-key header, required
// roles, role-gated tools, sessions bound to their principal, no token passthrough, and OAuth 2.1
// bearer JWTs (RS256 and ES256 through Web Crypto) with RFC 9728 metadata.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign as cryptoSign } from 'node:crypto';
import { startServer, INIT, TOKENS, sseEvents } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const authUrl = () => new URL('/auth/mcp', server.url);
const oauthUrl = () => new URL('/oauth/mcp', server.url);

function rpc(url, body, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function session(url, headers) {
  const res = await rpc(url, INIT, headers);
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  const sid = res.headers.get('mcp-session-id');
  assert.equal((await rpc(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...headers, 'mcp-session-id': sid })).status, 202);
  return sid;
}

async function tools(url, headers, sid) {
  const res = await rpc(url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { ...headers, 'mcp-session-id': sid });
  return (await res.json()).result.tools.map((t) => t.name);
}

const bot = { authorization: `Bearer ${TOKENS.BOT_TOKEN}` };
const admin = { 'x-api-key': TOKENS.ADMIN_KEY };

test('no or wrong credentials: 401 with WWW-Authenticate, and the body is never dispatched', async () => {
  const before = server.upstream.seen.length;
  const none = await rpc(authUrl(), '{this is not even json');
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="mcp-edge"');
  assert.deepEqual(await none.json(), { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Unauthorized' } });
  const wrong = await rpc(authUrl(), INIT, { authorization: 'Bearer nope' });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="mcp-edge", error="invalid_token"');
  const basic = await rpc(authUrl(), INIT, { authorization: `Basic ${Buffer.from('bot:x').toString('base64')}` });
  assert.equal(basic.status, 401);
  for (const method of ['GET', 'DELETE']) {
    assert.equal((await fetch(authUrl(), { method, headers: { 'mcp-session-id': 'x' } })).status, 401, method);
  }
  assert.equal((await fetch(new URL('/auth/sse', server.url))).status, 401);
  assert.equal(server.upstream.seen.length, before);
});

test('a principal without a required role gets 403', async () => {
  const res = await rpc(authUrl(), INIT, { authorization: `Bearer ${TOKENS.VISITOR_TOKEN}` });
  assert.equal(res.status, 403);
  assert.equal((await res.json()).error.message, 'Forbidden: this server needs the role bot');
});

test('role-gated tools are invisible to others, and calling one is the same error as an unknown tool', async () => {
  const botSid = await session(authUrl(), bot);
  assert.deepEqual(await tools(authUrl(), bot, botSid), ['echo', 'whoami']);
  const adminSid = await session(authUrl(), admin);
  assert.deepEqual(await tools(authUrl(), admin, adminSid), ['echo', 'whoami', 'admin_reset']);
  const call = async (name) => {
    const res = await rpc(authUrl(), { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: {} } }, { ...bot, 'mcp-session-id': botSid });
    return (await res.json()).error;
  };
  assert.deepEqual(await call('admin_reset'), { code: -32602, message: 'Invalid params: unknown tool "admin_reset"' });
  assert.deepEqual(await call('no_such_tool'), { code: -32602, message: 'Invalid params: unknown tool "no_such_tool"' });
  const res = await rpc(authUrl(), { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'admin_reset', arguments: {} } }, { ...admin, 'mcp-session-id': adminSid });
  assert.equal((await res.json()).result.isError, undefined);
});

test('a session belongs to the principal that created it: another principal gets 404', async () => {
  const sid = await session(authUrl(), bot);
  for (const method of ['POST', 'GET', 'DELETE']) {
    const res = method === 'POST'
      ? await rpc(authUrl(), { jsonrpc: '2.0', id: 1, method: 'ping' }, { ...admin, 'mcp-session-id': sid })
      : await fetch(authUrl(), { method, headers: { ...admin, accept: 'text/event-stream', 'mcp-session-id': sid } });
    assert.equal(res.status, 404, method);
  }
  // The owner's session is untouched.
  const ping = await rpc(authUrl(), { jsonrpc: '2.0', id: 1, method: 'ping' }, { ...bot, 'mcp-session-id': sid });
  assert.deepEqual(await ping.json(), { jsonrpc: '2.0', id: 1, result: {} });
});

test("the client's credentials never reach the upstream", async () => {
  const sid = await session(authUrl(), bot);
  const before = server.upstream.seen.length;
  const res = await rpc(authUrl(), { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } }, { ...bot, ...admin, 'mcp-session-id': sid });
  assert.deepEqual((await res.json()).result.structuredContent, { message: 'hi' });
  const seen = server.upstream.seen.slice(before);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].headers.authorization, undefined);
  assert.equal(seen[0].headers['x-api-key'], undefined);
});

/** Calls `whoami`, whose URL, headers and body are made of the caller's identity; returns what
 *  the upstream's /mirror/ saw. `accept` chooses who serves it: a JSON-only call is served from
 *  the Worker's lease on the session, an SSE one by the session's object. */
async function whoami(url, headers, sid, accept = 'application/json') {
  const res = await rpc(url, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'whoami', arguments: {} } }, { ...headers, 'mcp-session-id': sid, accept });
  assert.equal(res.status, 200);
  let reply;
  if (accept === 'application/json') reply = await res.json();
  // An SSE stream opens with a priming event of no data (2025-11-25); the reply follows.
  else for await (const event of sseEvents(res)) if (event.data) reply ??= JSON.parse(event.data);
  const seen = reply.result.structuredContent;
  assert.ok(seen, JSON.stringify(reply));
  return { ...seen, body: JSON.parse(seen.body) };
}

/** The request log lines of a session's tool calls: whether each was served from a lease. */
async function leased(sid) {
  await new Promise((r) => setTimeout(r, 100));
  return server.logs.filter((l) => l.startsWith('{"requestId"')).map((l) => JSON.parse(l)).filter((e) => e.sessionId === sid && e.method === 'tools/call').map((e) => e.lease === true);
}

test("tool templates carry a static token's subject and roles, from the lease and from the session's object", async () => {
  for (const [headers, subject, roles] of [[bot, 'bot', ['bot']], [admin, 'admin', ['bot', 'admin']]]) {
    const sid = await session(authUrl(), headers);
    for (const accept of ['application/json', 'text/event-stream']) {
      const seen = await whoami(authUrl(), headers, sid, accept);
      assert.equal(seen.method, 'POST');
      // URL: the subject as a path segment, the roles exploded into segments; with no email
      // known, `{?principal.email}` leaves no query.
      assert.equal(seen.path, `/mirror/${subject}/${roles.join('/')}`);
      assert.equal(seen.query, '');
      // Headers: text joins the roles with commas; the unknown email is empty.
      assert.equal(seen.headers['x-name'], `${subject} <>`);
      assert.equal(seen.headers['x-trace'], roles.join(','));
      // Body: `"{principal.roles}"` alone stays a list, and the unknown email is left out.
      assert.deepEqual(seen.body, { subject, roles, id: `token:${subject}` });
    }
    assert.deepEqual(await leased(sid), [true, false], subject);
  }
});

// OAuth: keys the test's identity provider signs with, published at the upstream's /jwks.
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

function jwt(claims, { alg = 'RS256', kid = alg === 'RS256' ? 'rsa-1' : 'ec-1', key } = {}) {
  const head = b64({ alg, kid, typ: 'JWT' });
  const body = b64(claims);
  const data = Buffer.from(`${head}.${body}`);
  const signature = alg === 'RS256'
    ? cryptoSign('sha256', data, key ?? rsa.privateKey)
    : cryptoSign('sha256', data, { key: key ?? ec.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${head}.${body}.${signature.toString('base64url')}`;
}

function claims(extra = {}) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: 'https://idp.test', aud: oauthUrl().href, sub: 'user-7', exp: now + 600, iat: now, ...extra };
}

test('OAuth: 401 points at RFC 9728 metadata, which names the authorization server', async () => {
  server.upstream.jwks = { keys: [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'rsa-1', use: 'sig', alg: 'RS256' }, { ...ec.publicKey.export({ format: 'jwk' }), kid: 'ec-1' }] };
  const res = await rpc(oauthUrl(), INIT);
  assert.equal(res.status, 401);
  const metadataUrl = `${server.url.origin}/.well-known/oauth-protected-resource/oauth/mcp`;
  assert.equal(res.headers.get('www-authenticate'), `Bearer realm="mcp-edge", resource_metadata="${metadataUrl}"`);
  for (const url of [metadataUrl, `${server.url.origin}/.well-known/oauth-protected-resource`]) {
    const meta = await fetch(url);
    assert.equal(meta.status, 200, url);
    assert.deepEqual(await meta.json(), {
      resource: oauthUrl().href,
      authorization_servers: ['https://idp.test'],
      bearer_methods_supported: ['header'],
      resource_name: 'mcp-edge',
      scopes_supported: ['mcp', 'admin'],
    });
  }
});

test('OAuth: RS256 and ES256 tokens for this server are accepted; scopes gate tools', async () => {
  for (const alg of ['RS256', 'ES256']) {
    const token = { authorization: `Bearer ${jwt(claims(), { alg })}` };
    const sid = await session(oauthUrl(), token);
    assert.deepEqual(await tools(oauthUrl(), token, sid), ['echo', 'whoami'], alg);
  }
  const adminToken = { authorization: `Bearer ${jwt(claims({ scope: 'mcp admin' }))}` };
  const sid = await session(oauthUrl(), adminToken);
  assert.deepEqual(await tools(oauthUrl(), adminToken, sid), ['echo', 'whoami', 'admin_reset']);
  // The same subject with another token is the same principal: the session follows it.
  const again = { authorization: `Bearer ${jwt(claims({ scope: 'mcp admin', iat: 1 }), { alg: 'ES256' })}` };
  assert.deepEqual(await tools(oauthUrl(), again, sid), ['echo', 'whoami', 'admin_reset']);
});

test("OAuth: a JWT's sub, email and scopes reach the templates; neither the email nor the principal's id is logged", async () => {
  const email = 'user7@example.test';
  const token = { authorization: `Bearer ${jwt(claims({ scope: 'mcp admin', email }))}` };
  const sid = await session(oauthUrl(), token);
  const before = server.upstream.seen.length;
  const seen = await whoami(oauthUrl(), token, sid);
  assert.equal(seen.path, '/mirror/user-7/mcp/admin');
  assert.equal(seen.query, `?principal.email=${encodeURIComponent(email)}`);
  assert.equal(seen.headers['x-name'], `user-7 <${email}>`);
  assert.equal(seen.headers['x-trace'], 'mcp,admin');
  assert.deepEqual(seen.body, { subject: 'user-7', roles: ['mcp', 'admin'], email, id: 'jwt:https://idp.test|user-7' });
  // The caller's token is for this server: it is not forwarded.
  const sent = server.upstream.seen.slice(before).filter((r) => r.url.startsWith('/mirror/'));
  assert.equal(sent.length, 1);
  assert.equal(sent[0].headers.authorization, undefined);
  await new Promise((r) => setTimeout(r, 100));
  const logged = server.logs.filter((l) => l.includes(sid));
  assert.ok(logged.some((l) => l.includes('"tool":"whoami"')), logged.join('\n'));
  assert.deepEqual(server.logs.filter((l) => l.includes(email) || l.includes('idp.test|user-7')), []);
});

test('OAuth: expired, foreign-audience, wrong-issuer, tampered and unsigned tokens get 401', async () => {
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const now = Math.floor(Date.now() / 1000);
  const good = jwt(claims());
  const cases = {
    expired: jwt(claims({ exp: now - 3600 })),
    audience: jwt(claims({ aud: 'https://other.example/mcp' })),
    issuer: jwt(claims({ iss: 'https://evil.test' })),
    tampered: `${good.split('.')[0]}.${b64(claims({ sub: 'admin' }))}.${good.split('.')[2]}`,
    foreignKey: jwt(claims(), { key: other.privateKey }),
    none: `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.`,
    hs256: `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims())}.${b64('x')}`,
  };
  for (const [name, token] of Object.entries(cases)) {
    const res = await rpc(oauthUrl(), INIT, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 401, name);
    assert.match(res.headers.get('www-authenticate'), /error="invalid_token"$/, name);
  }
});
