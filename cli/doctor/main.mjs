//! `mcp-edge doctor <url>`: walks a remote MCP server the way Claude's and ChatGPT's connectors
//! do (the 401, the metadata, registration, PKCE sign-in, the token, the session, CORS, SSE)
//! and names each fault with its spec section. Exit 0 healthy, 1 a fault, 2 a usage error.
import { authorizationServer } from './authserver.mjs';
import { authorize, loopback } from './authorize.mjs';
import { challenge } from './challenge.mjs';
import { cors, ORIGINS } from './cors.mjs';
import { skipped } from './faults.mjs';
import { canonical } from './http.mjs';
import { register } from './registration.mjs';
import { json, text } from './report.mjs';
import { protectedResource } from './resource.mjs';
import { Session } from './session.mjs';
import { sse } from './sse.mjs';
import { claims, exchange } from './token.mjs';

export const USAGE = `mcp-edge doctor <url> [options]

Connects to a remote MCP server (mcp-edge or any other) as Claude's and ChatGPT's connectors
do, step by step, and names each fault with the spec section it breaks. Exit code: 0 healthy,
1 a fault found, 2 a usage error. Reference: docs/doctor.md.

  --json                 print one JSON object instead of the report
  --token TOKEN          use this access token and skip registration and sign-in
  --token-env VAR        the same, read from the environment variable VAR (no shell history)
  --user NAME            sign in headless, by posting the server's HTML sign-in form
  --password-env VAR     the password for --user, read from the environment variable VAR
  --client-id ID         a pre-registered client id (or a CIMD URL) instead of registering one
  --scope "A B"          the scopes to ask for (default: the 401's scope, else none)
  --call NAME            the tool to call (default: the first that needs no arguments)
  --args JSON            its arguments (default {})
  --origins A,B          browser origins for the CORS checks (default ${ORIGINS.join(',')};
                         "" skips them)
  --timeout S            seconds per request (default 15)
  --browser-timeout S    seconds to wait for the browser sign-in (default 300)
  --sse-wait S           seconds to wait for a GET stream's first event (default 3)

Without --user or --token, the sign-in opens in your browser and returns to a listener on
127.0.0.1. Tokens and secrets are never printed: a token shows as a sha256 fingerprint.
`;

class UsageError extends Error {}

export function parse(args, env = process.env) {
  const o = { origins: ORIGINS, timeoutMs: 15_000, browserTimeoutMs: 300_000, sseWaitMs: 3_000 };
  const need = (i, flag) => {
    if (args[i] === undefined) throw new UsageError(`${flag} needs a value`);
    return args[i];
  };
  const seconds = (v, flag) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} takes a number of seconds`);
    return n * 1000;
  };
  const fromEnv = (name, flag) => {
    if (env[name] === undefined || env[name] === '') throw new UsageError(`${flag} ${name}: the environment variable ${name} is not set`);
    return env[name];
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--help' || a === '-h') o.help = true;
    else if (a === '--json') o.json = true;
    else if (a === '--token') o.token = need(++i, a);
    else if (a === '--token-env') o.token = fromEnv(need(++i, a), a);
    else if (a === '--user') o.user = need(++i, a);
    else if (a === '--password-env') o.password = fromEnv(need(++i, a), a);
    else if (a === '--client-id') o.clientId = need(++i, a);
    else if (a === '--scope') o.scope = need(++i, a);
    else if (a === '--call') o.call = need(++i, a);
    else if (a === '--args') {
      let v;
      try {
        v = JSON.parse(need(++i, a));
      } catch {
        throw new UsageError('--args takes a JSON object');
      }
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw new UsageError('--args takes a JSON object');
      o.args = v;
    } else if (a === '--origins') o.origins = need(++i, a).split(',').map((s) => s.trim()).filter(Boolean);
    else if (a === '--timeout') o.timeoutMs = seconds(need(++i, a), a);
    else if (a === '--browser-timeout') o.browserTimeoutMs = seconds(need(++i, a), a);
    else if (a === '--sse-wait') o.sseWaitMs = seconds(need(++i, a), a);
    else if (a.startsWith('-')) throw new UsageError(`unknown option ${a}`);
    else if (o.url === undefined) o.url = a;
    else throw new UsageError(`one URL at a time (got ${o.url} and ${a})`);
  }
  if (o.help) return o;
  if (!o.url) throw new UsageError('which server? give its MCP URL, such as https://example.com/mcp');
  let u;
  try {
    u = new URL(o.url);
  } catch {
    throw new UsageError(`${o.url} is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new UsageError(`${o.url}: the URL must be http or https`);
  o.url = u.href;
  if (o.password !== undefined && o.user === undefined) throw new UsageError('--password-env goes with --user');
  if (o.user !== undefined && o.password === undefined) throw new UsageError('--user needs --password-env VAR (the password is never taken on the command line)');
  if (o.args && !o.call) throw new UsageError('--args goes with --call');
  return o;
}

/** The steps in the order connectors meet them; ids absent at the end were not reached. */
const ORDER = [
  ['challenge', 'POST initialize without a token: 401 and WWW-Authenticate'],
  ['resource-metadata', 'Protected-resource metadata (RFC 9728)'],
  ['resource', 'resource is this server\'s URL (RFC 9728 §3.3, RFC 8707)'],
  ['authorization-servers', 'authorization_servers present'],
  ['authorization-server-metadata', 'Authorization-server metadata (RFC 8414 / OIDC discovery)'],
  ['issuer', 'issuer is the identifier it was fetched for (RFC 8414 §3.3)'],
  ['pkce', 'PKCE S256 offered'],
  ['registration', 'Client registration (CIMD or DCR)'],
  ['authorization', 'Authorization code with PKCE S256 (browser or headless sign-in)'],
  ['iss-parameter', 'Authorization response iss (RFC 9207)'],
  ['token', 'Token exchange with resource (RFC 8707)'],
  ['token-claims', 'Token claims: aud and iss (JWT)'],
  ['token-issuer', null],
  ['initialize', 'initialize and notifications/initialized'],
  ['tools-list', 'tools/list'],
  ['call', 'tools/call (one call)'],
  ['cors-preflight', 'CORS preflight'],
  ['cors-expose', 'CORS exposes Mcp-Session-Id and WWW-Authenticate'],
  ['sse', 'SSE events arrive before the stream ends'],
];

/** Runs every check; resolves with `{ url, ok, faults, steps }`. */
export async function diagnose(o, say = (m) => process.stderr.write(`${m}\n`)) {
  const ctx = { ...o, say };
  const steps = [];
  const skip = new Map(); // id → why, for steps a decision left out
  let token = o.token;
  let resource = canonical(o.url);
  let issuer;
  let wellKnownMetadata = false;

  const ch = await challenge(ctx);
  steps.push(ch.step);
  const oauthIds = ['resource-metadata', 'resource', 'authorization-servers', 'authorization-server-metadata', 'issuer', 'pkce', 'registration', 'authorization', 'iss-parameter', 'token', 'token-claims'];
  if (ch.open) {
    for (const id of oauthIds) skip.set(id, 'the server needs no token');
  } else if (!ch.fatal) {
    const prm = await protectedResource(ctx, ch.challenge ?? {});
    steps.push(...prm.steps);
    resource = prm.resource ?? resource;
    wellKnownMetadata = prm.steps.some((s) => s.id === 'resource-metadata' && s.ok) && (await wellKnownAnswers(ctx));
    if (prm.issuers) {
      const as = await authorizationServer(ctx, prm.issuers[0]);
      steps.push(...as.steps);
      issuer = as.issuer;
      const usable = as.metadata && typeof as.metadata.authorization_endpoint === 'string' && typeof as.metadata.token_endpoint === 'string';
      if (token) {
        for (const id of ['registration', 'authorization', 'iss-parameter', 'token']) skip.set(id, 'skipped: a token was given');
      } else if (usable) {
        const listener = await loopback();
        try {
          const reg = await register(ctx, as.metadata, listener.redirectUri);
          steps.push(reg.step);
          if (reg.step.ok && !reg.client) {
            for (const id of ['authorization', 'iss-parameter', 'token', 'token-claims']) skip.set(id, 'no client id to sign in with: pass --client-id or --token');
          }
          if (reg.client) {
            const scope = o.scope ?? ch.challenge?.scope;
            const auth = await authorize(ctx, as, reg.client, listener, resource, scope);
            steps.push(...auth.steps);
            if (auth.code) {
              const tok = await exchange(ctx, as, reg.client, listener.redirectUri, auth.code, auth.verifier, resource);
              steps.push(tok.step);
              token = tok.token;
            }
          }
        } finally {
          await listener.close();
        }
      }
    }
  }
  if (token && !ch.open) steps.push(...claims(token, resource, issuer));

  let session;
  if (!ch.fatal && (ch.open || token)) {
    session = new Session(ctx, token);
    const init = await session.initialize();
    steps.push(init);
    if (init.ok) {
      const listed = await session.listTools();
      steps.push(listed.step);
      if (listed.step.ok) steps.push(await session.callOne());
    }
  }
  if (!(ch.fatal && ch.step.fault === 'unreachable')) steps.push(...(await cors(ctx, { token, wellKnownMetadata: wellKnownMetadata || ch.open, postReaches: !ch.fatal })));
  if (session?.protocolVersion) steps.push(await sse(ctx, session));
  await session?.close();

  const firstFault = steps.find((s) => s.ok === false);
  const ordered = [];
  for (const [id, title] of ORDER) {
    const mine = steps.filter((s) => s.id === id);
    if (mine.length) ordered.push(...mine);
    else if (title) ordered.push(skipped(id, title, skip.get(id) ?? (firstFault ? `not reached (after ${firstFault.fault})` : 'not reached')));
  }
  const faults = [...new Set(ordered.filter((s) => s.ok === false).map((s) => s.fault))];
  return { url: o.url, ok: faults.length === 0, faults, steps: ordered };
}

/** Whether the well-known metadata URL answers too (browser clients' fallback). */
async function wellKnownAnswers(ctx) {
  const u = new URL(ctx.url);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  for (const url of [`${u.origin}/.well-known/oauth-protected-resource${path}`, `${u.origin}/.well-known/oauth-protected-resource`]) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(ctx.timeoutMs) });
      await res.body?.cancel();
      if (res.ok) return true;
    } catch {}
  }
  return false;
}

/** The command: prints the report (or JSON) and sets the exit code. */
export async function doctorCommand(args) {
  let o;
  try {
    o = parse(args);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`mcp-edge doctor: ${e.message}\n\n${USAGE}`);
    return 2;
  }
  if (o.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const result = await diagnose(o);
  process.stdout.write(o.json ? json(result) : text(result));
  return result.ok ? 0 : 1;
}
