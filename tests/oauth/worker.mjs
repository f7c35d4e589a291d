//! The Worker as an authorization server for the sign-in tests: the e2e harness's Miniflare on
//! the test build, configured by an `oauth` configuration (tests/oauth/config.json, or one made
//! for a test), with the e2e test upstream; and what OAuth clients under test share: PKCE, and an
//! in-memory `OAuthClientProvider` for the TypeScript SDK.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check } from '../../cli/check.mjs';
import { buildDir, root, startMiniflare } from '../e2e/harness.mjs';
import { startTestUpstream } from '../e2e/upstream.mjs';

/** The sign-in configuration, mode (c): configured users with passwords. */
export const OAUTH_CONFIG = join(root, 'tests', 'oauth', 'config.json');
/** The passwords of its users, given to the Worker as secrets. */
export const PASSWORDS = { ALICE_PASSWORD: 'alice-pw-3f9c1e', BOB_PASSWORD: 'bob-pw-7d20aa' };

export function readConfig(file = OAUTH_CONFIG) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/**
 * Checks `config` (an object) with the Worker's own check, so a configuration this build does not
 * understand fails with the check's report rather than as a worker that answers 500; then serves
 * it with its own test upstream. Returns `{ origin, mcpUrl, url, upstream, logs, close() }`.
 */
export async function startOAuthWorker({ config = readConfig(), bindings = {}, route = '/mcp', persist = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-oauth-config-'));
  const file = join(dir, 'mcp-edge.json');
  const text = JSON.stringify(config, null, 2);
  writeFileSync(file, text);
  const { ok, report } = await check(file, text, buildDir);
  if (!ok) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the test build (build-test/) rejects the sign-in configuration; does it have the authorization server (src/oauth/)?\n${report}`);
  }
  const upstream = await startTestUpstream();
  let worker;
  try {
    worker = await startMiniflare({ config: file, upstreamUrl: upstream.url, persist, bindings: { ...PASSWORDS, ...bindings } });
  } catch (e) {
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const origin = worker.url.origin;
  return {
    ...worker,
    origin,
    upstream,
    mcpUrl: new URL(route, origin),
    async close() {
      await worker.mf.dispose();
      await upstream.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An access token of mcp-edge's own for `username` on `worker` (a `startOAuthWorker` one), as a
 *  client gets it: registered, PKCE, signed in by the consent page's form, the code exchanged. */
export async function userToken(worker, username, password) {
  const redirect = 'http://127.0.0.1:9/cb';
  const client = await registerClient(worker.origin, { redirect_uris: [redirect], client_name: `${username}'s client` });
  const { verifier, challenge } = pkce();
  const url = new URL('/authorize', worker.origin);
  const resource = String(worker.mcpUrl);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: client.client_id, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 's', resource })) url.searchParams.set(k, v);
  const { code } = await signInByForm(url, { username, password });
  const t = await tokenRequest(worker.origin, { grant_type: 'authorization_code', code, redirect_uri: redirect, client_id: client.client_id, code_verifier: verifier, resource });
  if (t.status !== 200) throw new Error(`/token: HTTP ${t.status} ${JSON.stringify(t.body)}`);
  return t.body.access_token;
}

/** The value of the consent page's hidden form field `name`, unescaped. */
export const hidden = (text, name) => text.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]?.replace(/&quot;/g, '"').replace(/&amp;/g, '&');

/** A PKCE pair (S256). */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Registers a public client with Dynamic Client Registration; returns the 201's body. */
export async function registerClient(origin, metadata) {
  const res = await fetch(new URL('/register', origin), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...metadata }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`POST /register: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** POSTs a form to the token endpoint, with `headers` (client authentication); returns `{ status, headers, body }`. */
export async function tokenRequest(origin, form, headers = {}) {
  const res = await fetch(new URL('/token', origin), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...headers },
    body: new URLSearchParams(form),
  });
  return { status: res.status, headers: res.headers, body: await res.json().catch(() => null) };
}

/** An MCP `initialize` with `token` as the bearer; returns the response. */
export function initializeWith(mcpUrl, token) {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'oauth-tests', version: '1' } } }),
  });
}

/**
 * The TypeScript SDK's `OAuthClientProvider`, in memory. `authorize(url)` plays the user: it is
 * handed the authorization URL and resolves with the query the redirect URI received
 * (`{ code, state, iss }`), which the provider keeps in `callback` for the test to pass to
 * `transport.finishAuth(code)`. Every saved token set is kept in `saved`.
 */
export class MemoryOAuthProvider {
  constructor({ redirectUrl, clientName = 'TypeScript SDK OAuth test', authorize }) {
    this._redirectUrl = redirectUrl;
    this._clientName = clientName;
    this._authorize = authorize;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this.saved = [];
    this.authorizationUrls = [];
    this.callback = undefined;
    this.invalidated = [];
  }
  get redirectUrl() {
    return this._redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: this._clientName,
      redirect_uris: [String(this._redirectUrl)],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }
  get lastState() {
    return this._state;
  }
  clientInformation() {
    return this._client;
  }
  saveClientInformation(info) {
    this._client = info;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
    this.saved.push(tokens);
  }
  async redirectToAuthorization(url) {
    this.authorizationUrls.push(new URL(url));
    this.callback = await this._authorize(new URL(url));
  }
  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }
  codeVerifier() {
    if (!this._verifier) throw new Error('no code verifier saved');
    return this._verifier;
  }
  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === 'all' || scope === 'client') this._client = undefined;
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
  }
}

/** A `fetch` that records each request's method, path, status and, for /token, its grant type. */
export function recordingFetch(log) {
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init.method ?? (input instanceof Request ? input.method : 'GET');
    let grantType;
    if (url.pathname === '/token' && init.body) grantType = new URLSearchParams(String(init.body)).get('grant_type');
    const res = await fetch(input, init);
    log.push({ method, path: url.pathname, status: res.status, grantType, wwwAuthenticate: res.headers.get('www-authenticate') ?? undefined });
    return res;
  };
}

/**
 * Plays the user at the page an authorization URL shows, as a browser posts its form: signs in
 * with `fields` (username, password) and allows. Resolves with the query the redirect URI got.
 */
export async function signInByForm(url, fields) {
  const page = await fetch(url, { redirect: 'manual' });
  if (page.status !== 200) throw new Error(`GET /authorize: HTTP ${page.status}`);
  const body = await page.text();
  const field = (n) => body.match(new RegExp(`name="${n}" value="([^"]*)"`))[1].replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const res = await fetch(new URL('/authorize', url), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: new URL(url).origin },
    body: new URLSearchParams({ request: field('request'), csrf: field('csrf'), decision: 'allow', ...fields }),
  });
  if (res.status !== 302) throw new Error(`POST /authorize: HTTP ${res.status}`);
  return Object.fromEntries(new URL(res.headers.get('location')).searchParams);
}
