//! The code exchanged for a token, with `resource` (RFC 8707) and the PKCE verifier; then the
//! token's own claims when it is a JWT: `aud` must hold the resource and `iss` the issuer. The
//! signature is not checked: the doctor looks for mismatches, and the server checks the rest.
import { failed, passed, skipped } from './faults.mjs';
import { canonical, fingerprint, json, send, text } from './http.mjs';

/** Returns `{ step, token? }`. */
export async function exchange(ctx, as, client, redirectUri, code, verifier, resource) {
  const TITLE = 'Token exchange with resource (RFC 8707)';
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier, client_id: client.id, resource });
  const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (client.secret && client.authMethod === 'client_secret_post') form.set('client_secret', client.secret);
  else if (client.secret) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString('base64')}`;
  const endpoint = as.metadata.token_endpoint;
  const { res, error } = await send(endpoint, { method: 'POST', headers, body: form }, ctx.timeoutMs);
  if (error) return { step: failed('token', TITLE, 'token-failed', `POST ${endpoint}: ${error}`) };
  const body = await text(res);
  const answer = json(body) ?? {};
  if (res.status !== 200 || typeof answer.access_token !== 'string') {
    // The body may hold a token in odd answers: only the error fields are shown.
    return { step: failed('token', TITLE, 'token-failed', `POST ${endpoint}: HTTP ${res.status}${answer.error ? `, ${answer.error}${answer.error_description ? `: ${answer.error_description}` : ''}` : ''}`) };
  }
  const type = String(answer.token_type ?? '');
  const detail = `access token ${fingerprint(answer.access_token)}, token_type ${type || '(none)'}${answer.expires_in ? `, expires in ${answer.expires_in} s` : ''}${answer.refresh_token ? ', with a refresh token' : ''}${answer.scope ? `, scope "${answer.scope}"` : ''}`;
  const warning = type.toLowerCase() === 'bearer' ? undefined : `token_type "${type}": MCP clients send it as Bearer anyway`;
  return { step: passed('token', TITLE, detail, warning ? { warning } : {}), token: answer.access_token };
}

/**
 * The claims a token lets anyone read: a JWT's payload, or (for formats such as mcp-edge's
 * `mcpe_at.<claims>.<signature>`) a dot-separated segment that is a base64url JSON object with
 * `aud` or `iss`. Undefined for an opaque token.
 */
export function jwtClaims(token) {
  const parts = token.split('.');
  const decode = (p) => {
    try {
      const v = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
      return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
    } catch {
      return undefined;
    }
  };
  if (parts.length === 3) {
    const header = decode(parts[0]);
    const payload = decode(parts[1]);
    if (header && payload) return { header, payload, jwt: true };
  }
  for (const p of parts) {
    const payload = decode(p);
    if (payload && ('aud' in payload || 'iss' in payload)) return { header: {}, payload, jwt: false };
  }
  return undefined;
}

/** `aud` and `iss` of a JWT access token against the resource and the issuer. */
export function claims(token, resource, issuer) {
  const TITLE = 'Token claims: aud and iss (JWT)';
  const jwt = jwtClaims(token);
  if (!jwt) return [skipped('token-claims', TITLE, 'an opaque token: only the server can tell its audience')];
  const { payload, header } = jwt;
  const steps = [];
  const auds = [payload.aud].flat().filter((a) => typeof a === 'string');
  if (!auds.length) {
    steps.push(failed('token-claims', TITLE, 'aud-mismatch', `the token has no aud; the resource is "${resource}"`));
  } else if (!resource || auds.some((a) => canonical(a) === canonical(resource))) {
    steps.push(passed('token-claims', TITLE, `${jwt.jwt ? '' : 'not a JWT, readable claims: '}aud ${JSON.stringify(payload.aud)}`));
  } else {
    steps.push(failed('token-claims', TITLE, 'aud-mismatch', `aud ${JSON.stringify(payload.aud)}, but the resource is "${resource}"`));
  }
  if (payload.iss === undefined) {
    // RFC 9068 requires iss only of tokens typed at+jwt; others may leave it out.
    if (/at\+jwt/i.test(header.typ ?? '') && issuer) steps.push(failed('token-issuer', 'Token claims: iss', 'token-issuer-mismatch', `an at+jwt token without iss; the issuer is "${issuer}"`));
    else steps[0].detail += ', no iss claim';
  } else if (!issuer || payload.iss === issuer || canonical(payload.iss) === canonical(issuer)) {
    steps[0].detail += `, iss "${payload.iss}"`;
  } else {
    steps.push(failed('token-issuer', 'Token claims: iss', 'token-issuer-mismatch', `iss "${payload.iss}", but the authorization server's issuer is "${issuer}"`));
  }
  return steps;
}
