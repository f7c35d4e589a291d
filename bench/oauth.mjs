//! What sign-in costs. Per request: an MCP call with mcp-edge's own access token beside the
//! same call with a static bearer token, on one server, interleaved in one run (the token is
//! checked by its signature, with no storage hop). Per sign-in: the consent form posted with a
//! password (PBKDF2-SHA256, 100,000 iterations in Web Crypto) beside the same form from a
//! signed-in browser (its cookie), and the code exchange at /token.
//!
//!   node bench/oauth.mjs          (OAUTH_CALLS=400 calls each, OAUTH_SIGNINS=20 sign-ins each)
//!
//! Times are medians of wall time on this machine: compare the rows of one run, not runs.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup } from '../scripts/setup.mjs';
import { build } from '../scripts/build.mjs';
import { startMiniflare } from '../tests/e2e/harness.mjs';
import { startTestUpstream } from '../tests/e2e/upstream.mjs';
import { pkce, readConfig, registerClient, tokenRequest, PASSWORDS } from '../tests/oauth/worker.mjs';
import { median } from './startup.mjs';

const CALLS = Number(process.env.OAUTH_CALLS ?? 400);
const SIGNINS = Number(process.env.OAUTH_SIGNINS ?? 20);
const REDIRECT = 'http://127.0.0.1:9/callback';

setup();
const dir = build();
const config = readConfig();
config.oauth.accessTokenTtlSeconds = 3600;
config.servers[0].auth = { oauth: true, tokens: [{ secret: 'STATIC_TOKEN', subject: 'bot' }] };
const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-bench-oauth-')), 'mcp-edge.json');
writeFileSync(file, JSON.stringify(config));
const upstream = await startTestUpstream();
const worker = await startMiniflare({ dir, config: file, upstreamUrl: upstream.url, bindings: { ...PASSWORDS, STATIC_TOKEN: 'static-token-3f0a9c' } });
const origin = worker.url.origin;
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

/** One sign-in's steps, timed: the page, the form (with a password, or a cookie), /token. */
async function signIn(client, cookie) {
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: `${origin}/mcp` });
  const page = await fetch(`${origin}/authorize?${q}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  const body = await page.text();
  const field = (n) => body.match(new RegExp(`name="${n}" value="([^"]*)"`))[1].replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  const cookies = [cookie, ...page.headers.getSetCookie().map((c) => c.split(';')[0])].filter(Boolean).join('; ');
  const form = { request: field('request'), csrf: field('csrf'), decision: 'allow', ...(cookie ? {} : { username: 'alice', password: PASSWORDS.ALICE_PASSWORD }) };
  const t0 = process.hrtime.bigint();
  const res = await fetch(`${origin}/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies, origin }, body: new URLSearchParams(form) });
  const formMs = ms(t0);
  const code = new URL(res.headers.get('location')).searchParams.get('code');
  const t1 = process.hrtime.bigint();
  const t = await tokenRequest(origin, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: client.client_id });
  return { formMs, tokenMs: ms(t1), token: t.body.access_token, signedIn: res.headers.getSetCookie().map((c) => c.split(';')[0]).find((c) => c.startsWith('mcp_edge_signin=')) };
}

try {
  // Sign-ins: a password each time, and a signed-in browser (remembered consent off: a fresh
  // client each time shows the form).
  const withPassword = [];
  const withCookie = [];
  const exchanges = [];
  let signedIn;
  let token;
  for (let i = 0; i < SIGNINS; i++) {
    const a = await signIn(await registerClient(origin, { redirect_uris: [REDIRECT] }));
    withPassword.push(a.formMs);
    exchanges.push(a.tokenMs);
    signedIn = a.signedIn;
    token = a.token;
    const b = await signIn(await registerClient(origin, { redirect_uris: [REDIRECT] }), signedIn);
    withCookie.push(b.formMs);
  }

  // Calls: the same tools/list with either token, interleaved.
  const tokens = { static: 'static-token-3f0a9c', oauth: token };
  const sessions = {};
  const headers = (k) => ({ 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${tokens[k]}`, 'mcp-protocol-version': '2025-11-25', ...(sessions[k] ? { 'mcp-session-id': sessions[k] } : {}) });
  for (const k of Object.keys(tokens)) {
    const r = await fetch(`${origin}/mcp`, { method: 'POST', headers: headers(k), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) });
    sessions[k] = r.headers.get('mcp-session-id');
  }
  const calls = { static: [], oauth: [] };
  for (let i = 0; i < CALLS + 50; i++) {
    for (const k of Object.keys(tokens)) {
      const t0 = process.hrtime.bigint();
      const r = await fetch(`${origin}/mcp`, { method: 'POST', headers: headers(k), body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
      if (r.status !== 200) throw new Error(`tools/list with the ${k} token: HTTP ${r.status}`);
      await r.text();
      // The first 50 of each warm the isolate.
      if (i >= 50) calls[k].push(ms(t0));
    }
  }
  const round = (x) => Math.round(x * 100) / 100;
  const report = {
    callMedianMs: { staticToken: round(median(calls.static)), oauthToken: round(median(calls.oauth)), ratio: round(median(calls.oauth) / median(calls.static)) },
    signInMedianMs: { formWithPassword: round(median(withPassword)), formSignedIn: round(median(withCookie)), tokenExchange: round(median(exchanges)) },
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  await worker.mf.dispose();
  await upstream.close();
}
