// Sign-in mode (b) on seed 004's deployment (examples/interactions): the host application's own
// session cookie decides who signs in at /authorize, through the server's introspection; a
// browser without one is sent to the host application's login page. The token then stands for
// that principal on that one chat's server, and the cookie path keeps working beside it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root, INIT, lines } from '../e2e/harness.mjs';
import { startBackend, CHAT_UUID } from '../../examples/interactions/backend.mjs';
import { pkce, registerClient, startOAuthWorker, tokenRequest } from './worker.mjs';

const REDIRECT = 'http://127.0.0.1:9/callback';
const OTHER_CHAT = '87654321-4321-4321-4321-cba987654321';
let backend;
let w;

before(async () => {
  backend = await startBackend();
  const config = JSON.parse(readFileSync(join(root, 'examples', 'interactions', 'mcp-edge.json'), 'utf8'));
  config.oauth = { signIn: { introspection: { loginUrl: `${backend.url}/login?next={return}` } } };
  config.servers[0].auth.oauth = true;
  w = await startOAuthWorker({ config, bindings: { BACKEND_URL: backend.url, N8N_WEBHOOK_URL: `${backend.url}/webhook/n8n` } });
});
after(async () => {
  await w?.close();
  await backend?.close();
});

const chat = (id = CHAT_UUID) => `${w.origin}/api/v1/interactions/${id}/mcp`;

async function authorize(clientId, cookie, verifier) {
  const { challenge } = verifier ? { challenge: (await import('node:crypto')).createHash('sha256').update(verifier).digest('base64url') } : pkce();
  const params = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 's', resource: chat() });
  return fetch(new URL(`/authorize?${params}`, w.origin), { redirect: 'manual', headers: cookie ? { cookie } : {} });
}

async function ndjson(token, messages, id = CHAT_UUID, extra = {}) {
  const res = await fetch(chat(id), {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', accept: 'application/x-ndjson', authorization: `Bearer ${token}`, ...extra },
    body: messages.map((m) => JSON.stringify(m)).join('\n') + '\n',
  });
  const out = [];
  if (res.status === 200) for await (const line of lines(res)) if (line) out.push(JSON.parse(line));
  return { res, out };
}

test('a browser without the host application\'s session goes to its login page, and comes back', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  const res = await authorize(client.client_id);
  assert.equal(res.status, 302);
  const login = new URL(res.headers.get('location'));
  assert.equal(`${login.origin}${login.pathname}`, `${backend.url}/login`);
  const back = new URL(login.searchParams.get('next'));
  assert.equal(`${back.origin}${back.pathname}`, `${w.origin}/authorize`);
  assert.equal(back.searchParams.get('client_id'), client.client_id);
  assert.equal(back.searchParams.get('resource'), chat());
  // A session the host application does not know is no session.
  assert.equal((await authorize(client.client_id, 'session_id=forged-session')).status, 302);
});

test('the signed-in bot user allows the client; the token is the bot on this chat only', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT], client_name: 'Chat client' });
  const { verifier } = pkce();
  const cookie = 'theme=dark; session_id=bot-session';
  const page = await authorize(client.client_id, cookie, verifier);
  assert.equal(page.status, 200);
  const body = await page.text();
  assert.match(body, /id="signed-in">Signed in as bot</);
  assert.doesNotMatch(body, /id="password"/);
  const field = (n) => body.match(new RegExp(`name="${n}" value="([^"]*)"`))[1].replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  const csrf = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const form = new URLSearchParams({ request: field('request'), csrf: field('csrf'), decision: 'allow' });
  const allowed = await fetch(new URL('/authorize', w.origin), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `${cookie}; ${csrf}`, origin: w.origin }, body: form });
  assert.equal(allowed.status, 302);
  const code = new URL(allowed.headers.get('location')).searchParams.get('code');
  const t = await tokenRequest(w.origin, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: client.client_id, resource: chat() });
  assert.equal(t.status, 200, JSON.stringify(t.body));

  const { res, out } = await ndjson(t.body.access_token, [INIT]);
  assert.equal(res.status, 200);
  assert.equal(out[0].result.serverInfo.name, 'signal-bot-interactions');
  const session = { 'mcp-session-id': res.headers.get('mcp-session-id') };
  const sent = await ndjson(t.body.access_token, [
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'signal_send_message', arguments: { message: 'signed in through OAuth' } } },
  ], CHAT_UUID, session);
  assert.deepEqual(sent.out.find((m) => m.id === 2).result.structuredContent.sent, true);
  // The host application learns who sent it: the principal from its own introspection.
  assert.deepEqual(backend.chats.get(CHAT_UUID).messages.at(-1), { from: 'bot', text: 'signed in through OAuth' });
  // Another chat's server is another MCP server: the token is not for it.
  const other = await ndjson(t.body.access_token, [INIT], OTHER_CHAT);
  assert.equal(other.res.status, 401);
  assert.match(other.res.headers.get('www-authenticate'), /error="invalid_token"/);
});

test('a signed-in user without the bot role is told so at /authorize, and gets no code', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  // alice is a person in the chat, without the bot role the server requires.
  const res = await authorize(client.client_id, 'session_id=alice-session');
  assert.equal(res.status, 403);
  assert.equal(res.headers.get('location'), null);
  assert.match(await res.text(), /You are signed in as alice, who may not use this server: it needs the role bot\./);
});

test('the host application\'s session cookie still works without OAuth', async () => {
  const res = await fetch(chat(), { method: 'POST', headers: { 'content-type': 'application/x-ndjson', accept: 'application/x-ndjson', cookie: 'session_id=bot-session' }, body: JSON.stringify(INIT) + '\n' });
  assert.equal(res.status, 200);
});
