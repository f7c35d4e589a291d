//! The first request a connector makes: `initialize` without a token. A protected MCP server
//! answers 401 with `WWW-Authenticate: Bearer resource_metadata=…, scope=…`; anything else says
//! whether the path is wrong, or whether something in front of the server answered instead.
import { failed, passed } from './faults.mjs';
import { isHtml, json, parseChallenges, readReply, send, text } from './http.mjs';

export const INITIALIZE = (id = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcp-edge-doctor', version: '1' } },
});

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

const TITLE = 'POST initialize without a token: 401 and WWW-Authenticate';

/** A body that came from a JSON-RPC server rather than a page of something in front. */
const isJsonRpc = (value) => value && typeof value === 'object' && value.jsonrpc === '2.0';

/** Returns `{ step, challenge?, open? }`: `open` when the server needs no token. */
export async function challenge(ctx) {
  const { res, error, started } = await send(ctx.url, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INITIALIZE()) }, ctx.timeoutMs);
  if (error) return { step: failed('challenge', TITLE, 'unreachable', `POST ${ctx.url}: ${error}`), fatal: true };
  const status = res.status;
  const header = res.headers.get('www-authenticate');
  if (status === 401) {
    const body = await text(res);
    if (!header) {
      // A JSON-RPC error body is the MCP server itself forgetting the header; a page (or nothing
      // JSON at all) is a gateway's own 401.
      if (isJsonRpc(json(body)) || /json/i.test(res.headers.get('content-type') ?? '')) {
        return { step: failed('challenge', TITLE, 'missing-www-authenticate', `HTTP 401 with no WWW-Authenticate header; body: ${clip(body)}`), challenge: {} };
      }
      return { step: failed('challenge', TITLE, 'blocked-in-front', `HTTP 401 with no WWW-Authenticate header and a ${isHtml(res, body) ? 'HTML page' : 'non-JSON body'}${server(res)}: ${clip(body)}`), fatal: true };
    }
    const bearer = parseChallenges(header).find((c) => c.scheme.toLowerCase() === 'bearer');
    if (!bearer) return { step: failed('challenge', TITLE, 'not-bearer', `WWW-Authenticate: ${header}`), challenge: {} };
    const p = bearer.params;
    const notes = [];
    if (!p.resource_metadata) notes.push('no resource_metadata (clients fall back to the well-known URLs)');
    if (!p.scope) notes.push('no scope (MCP "Scope Selection Strategy": servers SHOULD name the scopes; clients then use scopes_supported)');
    const detail = `HTTP 401, WWW-Authenticate: Bearer${p.resource_metadata ? `, resource_metadata=${p.resource_metadata}` : ''}${p.scope ? `, scope="${p.scope}"` : ''}${p.error ? `, error=${p.error}` : ''}`;
    return { step: passed('challenge', TITLE, detail, notes.length ? { warning: notes.join('; ') } : {}), challenge: { resourceMetadata: p.resource_metadata, scope: p.scope } };
  }
  if (status >= 200 && status < 300) {
    const reply = await readReply(res, started);
    if (reply.messages.some((m) => m.id === 1 && m.result)) {
      return { step: passed('challenge', TITLE, `HTTP ${status}: the server answers initialize without a token; it needs no sign-in, so the OAuth steps are skipped`), open: true };
    }
    const body = reply.body ?? '';
    return { step: failed('challenge', TITLE, 'blocked-in-front', `HTTP ${status} without a JSON-RPC reply${isHtml(res, body) ? ' (an HTML page: a sign-in or challenge page in front of the server)' : ''}${server(res)}: ${clip(body)}`), fatal: true };
  }
  const body = await text(res);
  if (status === 404 || status === 405) {
    return { step: failed('challenge', TITLE, 'wrong-path', `HTTP ${status} for POST ${new URL(ctx.url).pathname}${isJsonRpc(json(body)) ? ` from the MCP server: ${clip(body)}` : ''}`), fatal: true };
  }
  if (status >= 300 && status < 400) {
    const location = res.headers.get('location');
    const to = location ? new URL(location, ctx.url) : undefined;
    const samePlace = to && to.pathname.replace(/\/$/, '') === new URL(ctx.url).pathname.replace(/\/$/, '');
    return { step: failed('challenge', TITLE, samePlace ? 'redirected' : 'blocked-in-front', `HTTP ${status} to ${location ?? '(no Location)'}${samePlace ? '' : ': a redirect to a sign-in page of something in front of the server'}`), fatal: true };
  }
  if (status === 403 || status === 407 || status === 429 || (status === 400 && isHtml(res, body))) {
    return { step: failed('challenge', TITLE, 'blocked-in-front', `HTTP ${status}${isHtml(res, body) ? ' with an HTML page' : ''}${server(res)}, not the MCP server's 401: ${clip(body)}`), fatal: true };
  }
  if (status >= 500) return { step: failed('challenge', TITLE, 'server-error', `HTTP ${status}${server(res)}: ${clip(body)}`), fatal: true };
  return { step: failed('challenge', TITLE, 'unexpected-status', `HTTP ${status}: ${clip(body)}`), fatal: true };
}

/** The `Server` (and Cloudflare's ray) header, which often names what answered. */
function server(res) {
  const name = res.headers.get('server');
  const ray = res.headers.get('cf-ray');
  return name || ray ? ` (Server: ${name ?? '?'}${ray ? ', cf-ray present' : ''})` : '';
}

export const clip = (s, n = 200) => {
  const t = String(s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > n ? `${t.slice(0, n)}…` : t || '(empty)';
};
