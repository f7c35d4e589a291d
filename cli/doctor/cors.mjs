//! CORS from the connectors' web origins: the preflight a browser sends before a POST with
//! `Authorization` and the MCP headers, and whether the answer lets a page read `Mcp-Session-Id`
//! (and `WWW-Authenticate`, which browser clients read on a 401 to find the metadata).
import { failed, passed, skipped } from './faults.mjs';
import { INITIALIZE, MCP_HEADERS } from './challenge.mjs';
import { send } from './http.mjs';

export const ORIGINS = ['https://claude.ai', 'https://chatgpt.com'];
const REQUESTED = ['authorization', 'content-type', 'mcp-protocol-version', 'mcp-session-id'];

const list = (v) => (v ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);

async function preflight(ctx, origin) {
  const { res, error } = await send(ctx.url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': REQUESTED.join(', ') } }, ctx.timeoutMs);
  if (error) return `OPTIONS: ${error}`;
  await res.body?.cancel();
  const problems = [];
  if (res.status < 200 || res.status >= 300) problems.push(`HTTP ${res.status}`);
  const allowOrigin = res.headers.get('access-control-allow-origin');
  if (allowOrigin !== origin && allowOrigin !== '*') problems.push(`Access-Control-Allow-Origin ${allowOrigin ? `"${allowOrigin}"` : 'missing'}`);
  const methods = list(res.headers.get('access-control-allow-methods'));
  if (!methods.includes('post') && !methods.includes('*')) problems.push(`POST not in Access-Control-Allow-Methods (${methods.join(', ') || 'missing'})`);
  const headers = list(res.headers.get('access-control-allow-headers'));
  // A `*` covers every header but Authorization (Fetch standard, CORS-preflight fetch).
  const missing = REQUESTED.filter((h) => !headers.includes(h) && !(headers.includes('*') && h !== 'authorization'));
  if (missing.length) problems.push(`not allowed: ${missing.join(', ')}`);
  return problems.length ? `${origin}: ${problems.join('; ')}` : undefined;
}

/** Returns the steps `cors-preflight` and `cors-expose`. */
export async function cors(ctx, { token, wellKnownMetadata, postReaches = true }) {
  const origins = ctx.origins;
  if (!origins.length) return [skipped('cors-preflight', 'CORS preflight', 'no origins (--origins "")')];
  const steps = [];
  const refusals = (await Promise.all(origins.map((o) => preflight(ctx, o)))).filter(Boolean);
  const PTITLE = `CORS preflight from ${origins.join(', ')}`;
  if (refusals.length) {
    steps.push(failed('cors-preflight', PTITLE, 'cors-refused', refusals.join(' | ')));
    return steps;
  }
  steps.push(passed('cors-preflight', PTITLE, `POST with ${REQUESTED.join(', ')} allowed`));

  // The real response's exposed headers: with the token on a fresh session (then ended), else on
  // the 401 a browser client meets first.
  const ETITLE = 'CORS exposes Mcp-Session-Id and WWW-Authenticate';
  if (!postReaches) {
    steps.push(skipped('cors-expose', ETITLE, 'not reached: a POST does not reach the MCP server (above)'));
    return steps;
  }
  const origin = origins[0];
  const headers = { ...MCP_HEADERS, origin };
  if (token) headers.authorization = `Bearer ${token}`;
  const { res, error } = await send(ctx.url, { method: 'POST', headers, body: JSON.stringify(INITIALIZE(1)) }, ctx.timeoutMs);
  if (error) {
    steps.push(skipped('cors-expose', ETITLE, error));
    return steps;
  }
  await res.body?.cancel();
  const session = res.headers.get('mcp-session-id');
  if (session) {
    await send(ctx.url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } }, ctx.timeoutMs);
  }
  const allowOrigin = res.headers.get('access-control-allow-origin');
  if (allowOrigin !== origin && allowOrigin !== '*') {
    steps.push(failed('cors-expose', ETITLE, 'cors-refused', `the POST's answer (HTTP ${res.status}) has Access-Control-Allow-Origin ${allowOrigin ? `"${allowOrigin}"` : 'missing'}: the page cannot read it`));
    return steps;
  }
  const exposed = list(res.headers.get('access-control-expose-headers'));
  const has = (h) => exposed.includes(h) || (exposed.includes('*') && allowOrigin === '*');
  if (!has('mcp-session-id')) {
    steps.push(failed('cors-expose', ETITLE, 'cors-expose', `Access-Control-Expose-Headers: ${exposed.join(', ') || '(none)'}`));
    return steps;
  }
  if (!has('www-authenticate')) {
    // Browser clients that cannot read the header fall back to the well-known URLs.
    if (wellKnownMetadata) {
      steps.push(passed('cors-expose', ETITLE, `Access-Control-Expose-Headers: ${exposed.join(', ')}`, { warning: 'WWW-Authenticate is not exposed: browser clients cannot read resource_metadata or scope from the 401 and use the well-known metadata URL instead (which answers)' }));
    } else {
      steps.push(failed('cors-expose', ETITLE, 'cors-expose', `Access-Control-Expose-Headers: ${exposed.join(', ') || '(none)'}: WWW-Authenticate not exposed, and no well-known metadata to fall back on`));
    }
    return steps;
  }
  steps.push(passed('cors-expose', ETITLE, `Access-Control-Expose-Headers: ${exposed.join(', ')}`));
  return steps;
}
