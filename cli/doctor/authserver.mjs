//! Authorization-server metadata: RFC 8414's well-known URL with the issuer's path inserted,
//! then OpenID Connect discovery (both forms), as the MCP spec orders them. The `issuer` must be
//! the identifier it was fetched for (RFC 8414 §3.3), and PKCE S256 must be on offer.
import { failed, passed } from './faults.mjs';
import { canonical, json, send, text } from './http.mjs';

export function metadataUrls(issuer) {
  const u = new URL(issuer);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  if (!path) return [`${u.origin}/.well-known/oauth-authorization-server`, `${u.origin}/.well-known/openid-configuration`];
  return [`${u.origin}/.well-known/oauth-authorization-server${path}`, `${u.origin}/.well-known/openid-configuration${path}`, `${u.origin}${path}/.well-known/openid-configuration`];
}

/** Returns `{ steps, metadata?, issuer? }`: `issuer` is what the later checks compare against. */
export async function authorizationServer(ctx, identifier) {
  const steps = [];
  const tried = [];
  let metadata;
  let where;
  for (const u of metadataUrls(identifier)) {
    const { res, error } = await send(u, { headers: { accept: 'application/json' } }, ctx.timeoutMs);
    if (error) {
      tried.push(`${u}: ${error}`);
      continue;
    }
    const parsed = json(await text(res));
    if (res.status === 200 && parsed && typeof parsed === 'object') {
      metadata = parsed;
      where = u;
      break;
    }
    tried.push(`${u}: HTTP ${res.status}`);
  }
  if (!metadata) {
    steps.push(failed('authorization-server-metadata', 'Authorization-server metadata (RFC 8414 / OIDC discovery)', 'as-metadata-missing', tried.join('; ')));
    return { steps };
  }
  steps.push(passed('authorization-server-metadata', 'Authorization-server metadata (RFC 8414 / OIDC discovery)', `found at ${where}`));

  const ITITLE = 'issuer is the identifier it was fetched for (RFC 8414 §3.3)';
  if (metadata.issuer === identifier) {
    steps.push(passed('issuer', ITITLE, `issuer "${metadata.issuer}"`));
  } else if (typeof metadata.issuer === 'string' && canonical(metadata.issuer) === canonical(identifier)) {
    steps.push(passed('issuer', ITITLE, `issuer "${metadata.issuer}"`, { warning: `differs from "${identifier}" only by a trailing slash: strict clients refuse that` }));
  } else {
    steps.push(failed('issuer', ITITLE, 'issuer-mismatch', `fetched for "${identifier}", the metadata says issuer "${metadata.issuer ?? '(none)'}"`));
  }

  const methods = metadata.code_challenge_methods_supported;
  if (Array.isArray(methods) && methods.includes('S256')) {
    steps.push(passed('pkce', 'PKCE S256 offered', `code_challenge_methods_supported: ${methods.join(', ')}`));
  } else {
    steps.push(failed('pkce', 'PKCE S256 offered', 'no-pkce', `code_challenge_methods_supported: ${JSON.stringify(methods ?? null)}`));
  }
  for (const key of ['authorization_endpoint', 'token_endpoint']) {
    if (typeof metadata[key] !== 'string') steps.push(failed('authorization-server-metadata', `metadata names ${key}`, 'as-metadata-missing', `no ${key} in ${where}`));
  }
  // After a mismatch a strict client stops; the doctor goes on with the identifier it trusts, so
  // the later checks name their own faults rather than repeat this one.
  return { steps, metadata, issuer: identifier };
}
