//! What a connection costs a plain call (issue 42): the bench's `echo` tool called with the
//! caller's own token from a per-user connection (`auth.connection`), against the same tool with
//! the deployment's static secret (`Authorization: Bearer {env.…}`), compared by bench/ab.mjs's
//! paired CPU ratio; and how often a call read the principal's token from its Durable Object
//! (`mcp_edge_connection_token_reads_total` on /metrics over the calls made). The budget: one
//! read per isolate and refresh period, not one per call. A figure, not a timed assertion.
//!
//! Both configurations sign their callers in with mcp-edge's own authorization server; the
//! connection's provider is oidc-provider on 127.0.0.1 (tests/oauth/idp.mjs), with tokens that
//! outlive the run. Before the load, each server's caller signs in and, for the connection, goes
//! through the connect page and the provider's consent headlessly (plain form posts).
//!
//!   node bench/connections.mjs [build dir]     (build-bench by default; `npm run bench` builds it)
//!   CONNECTIONS_ROUNDS=8 CONNECTIONS_SECONDS=8 AB_TOGETHER=1 node bench/connections.mjs
//!
//! `npm run bench` runs it after governance's (BENCH_CONNECTIONS=0 skips it).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root } from '../scripts/setup.mjs';
import { paired } from './paired.mjs';
import { connectHeadless, connectLink } from '../tests/oauth/headless.mjs';

const PASSWORD = 'bench-password-0d9c2e61';
const STATIC = 'bench-static-token-5b7e0a94c1';
const CONNECTION = 'bench';
const ADMIN = 'bench-admin-token-7c3e9a0d5f1b2468';

/** The two configurations: the bench's servers, signed in, the echo tool with a connection or a static secret. */
function configs(issuer, clientSecretName) {
  const base = JSON.parse(readFileSync(join(root, 'bench', 'mcp-edge.bench.json'), 'utf8'));
  const signedIn = (tool) => ({
    ...base,
    admission: { requests: 1000000 },
    oauth: { signIn: { users: [{ username: 'bench', passwordSecret: 'BENCH_PASSWORD' }] }, registration: 'open', accessTokenTtlSeconds: 86400, privateHosts: ['127.0.0.1'] },
    connections: [{ name: CONNECTION, title: 'Bench provider', issuer, clientId: 'mcp-edge', clientSecret: clientSecretName, scopes: ['openid'], privateHosts: ['127.0.0.1'] }],
    servers: base.servers.filter((s) => s.route === '/mcp').map((s) => ({ ...s, auth: { oauth: true }, tools: s.tools.map((t) => (t.name === 'echo' ? tool(t) : t)) })),
  });
  return {
    'static secret': signedIn((t) => ({ ...t, http: { ...t.http, headers: { Authorization: 'Bearer {env.BENCH_STATIC_TOKEN}' } } })),
    connection: signedIn((t) => ({ ...t, auth: { connection: CONNECTION } })),
  };
}

const hidden = (text, name) => text.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]?.replace(/&quot;/g, '"').replace(/&amp;/g, '&');

/** An access token of mcp-edge's own for the bench's user. */
async function accessToken(origin, resource) {
  const { createHash, randomBytes } = await import('node:crypto');
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const redirect = 'http://127.0.0.1:9/cb';
  const client = await (await fetch(new URL('/register', origin), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [redirect], client_name: 'bench', token_endpoint_auth_method: 'none' }) })).json();
  const url = new URL('/authorize', origin);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: client.client_id, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 's', resource })) url.searchParams.set(k, v);
  const page = await fetch(url);
  const text = await page.text();
  const res = await fetch(new URL('/authorize', origin), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; '), origin },
    body: new URLSearchParams({ request: hidden(text, 'request'), csrf: hidden(text, 'csrf'), decision: 'allow', username: 'bench', password: PASSWORD }),
  });
  const code = new URL(res.headers.get('location')).searchParams.get('code');
  const token = await fetch(new URL('/token', origin), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirect, client_id: client.client_id, code_verifier: verifier, resource }) });
  const body = await token.json();
  if (!body.access_token) throw new Error(`bench sign-in: ${JSON.stringify(body)}`);
  return body.access_token;
}

/** One call of echo as `token`, without a session's stream: its reply's text. */
async function callOnce(url, token) {
  const headers = { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-06-18' };
  const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) });
  await init.text();
  const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id') };
  await (await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  const res = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'bench-echo' } } }) });
  return res.text();
}

/** The connect link a call gives before the user has connected, followed headlessly
 *  (tests/oauth/headless.mjs): mcp-edge's console sign-in, the connect page, the provider's login
 *  and consent, the callback. */
async function connect(url, token) {
  const reply = await callOnce(url, token);
  const link = connectLink(reply);
  if (!link) throw new Error(`no connect link in ${reply}`);
  // The provider's account: one tests/oauth/idp.mjs knows.
  await connectHeadless(link, { username: 'bench', password: PASSWORD, account: 'alice' });
}

/** bench/ab.mjs's AB_PREPARE hook: the caller's token, and for the connection's server, its connection. */
export async function prepare({ target, url }) {
  const token = await accessToken(url.origin, url.href);
  if (target.endsWith('connection.json')) await connect(url, token);
  return { authorization: `Bearer ${token}` };
}

/** bench/ab.mjs's report hook: the principal's token read from its object, per call, as
 *  `/metrics` counts them (the health object is told a second or so after the calls). */
export async function report({ url, calls }) {
  await new Promise((r) => setTimeout(r, 3000));
  const text = await (await fetch(new URL('/metrics', url.origin), { headers: { authorization: `Bearer ${ADMIN}` } })).text();
  const reads = text.split('\n').filter((l) => l.startsWith('mcp_edge_connection_token_reads_total')).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  return { calls, reads, readsPerCall: calls ? reads / calls : 0 };
}

export async function connections({ dir = join(root, 'build-bench'), rounds = Number(process.env.CONNECTIONS_ROUNDS ?? 6), seconds = Number(process.env.CONNECTIONS_SECONDS ?? 3) } = {}) {
  const { startIdp } = await import('../tests/oauth/idp.mjs');
  const idp = await startIdp();
  // Each server listens on a port of its own, known only once bench/ab.mjs has started it: the
  // provider takes any loopback origin's connections callback as this client's redirect URI.
  const provider = idp.configure({ redirectUris: ['http://127.0.0.1/connections/callback'], options: { ttl: { AccessToken: 86400 } } });
  provider.Client.prototype.redirectUriAllowed = (uri) => /^http:\/\/127\.0\.0\.1:\d+\/connections\/callback$/.test(uri);
  const dirConfigs = mkdtempSync(join(tmpdir(), 'mcp-edge-connections-bench-'));
  const targets = Object.entries(configs(idp.issuer, 'BENCH_CONNECTION_SECRET')).map(([name, config]) => {
    const file = join(dirConfigs, `${name.replace(/ /g, '-')}.json`);
    writeFileSync(file, JSON.stringify(config));
    return { name, target: `${dir}=${file}` };
  });
  try {
    const rows = await paired(targets, { rounds, seconds, env: { AB_PREPARE: fileURLToPath(import.meta.url), AB_BINDINGS: JSON.stringify({ BENCH_PASSWORD: PASSWORD, BENCH_STATIC_TOKEN: STATIC, BENCH_CONNECTION_SECRET: 'idp-client-secret-5e1b0c7d', MCP_EDGE_ADMIN_TOKEN: ADMIN }) } });
    return { rows: rows.map(({ name, ...row }) => ({ setting: name, ...row })), rounds, seconds };
  } finally {
    await idp.close();
  }
}

export function connectionsTable(result) {
  return [
    `A connection's cost (bench/connections.mjs): CPU per call with the caller's own token from a connection against the deployment's static secret, ${result.rounds} paired rounds of ${result.seconds} s (bench/ab.mjs); token reads from /metrics over the calls made (warm-up included).`,
    '',
    '| setting | CPU µs/call (rounds) | ÷ static secret (median of paired rounds) | req/s | bad replies | calls | token reads | reads per call |',
    '|---|---|---|---|---|---|---|---|',
    ...result.rows.map((r) => `| ${r.setting} | ${r.us_per_call} (${r.us_rounds.join(', ')}) | ${r.ratio_to_first.toFixed(3)} | ${r.rps} | ${r.bad} | ${r.report?.calls ?? ''} | ${r.report?.reads ?? ''} | ${r.report ? r.report.readsPerCall.toExponential(1) : ''} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ? join(process.cwd(), process.argv[2]) : undefined;
  console.log(connectionsTable(await connections({ dir })));
}
