//! Protected-resource metadata (RFC 9728): found from the 401's `resource_metadata`, else at the
//! well-known URL with the endpoint's path, then at the root (MCP "Protected Resource Metadata
//! Discovery Requirements"). Its `resource` must be this server's URL; it must name an issuer.
import { failed, passed, skipped } from './faults.mjs';
import { canonical, covers, json, send, text } from './http.mjs';
import { clip } from './challenge.mjs';

/** The URLs to try, in the order the MCP spec gives. */
export function metadataUrls(url, fromHeader) {
  const u = new URL(url);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  const urls = [];
  if (fromHeader) urls.push(new URL(fromHeader, url).href);
  if (path) urls.push(`${u.origin}/.well-known/oauth-protected-resource${path}`);
  urls.push(`${u.origin}/.well-known/oauth-protected-resource`);
  return [...new Set(urls)];
}

/** Returns `{ steps, resource?, issuers?, scopes? }`; `resource` is the value to send as RFC 8707's. */
export async function protectedResource(ctx, challenge) {
  const steps = [];
  const tried = [];
  let metadata;
  let where;
  for (const u of metadataUrls(ctx.url, challenge.resourceMetadata)) {
    const { res, error } = await send(u, { headers: { accept: 'application/json' } }, ctx.timeoutMs);
    if (error) {
      tried.push(`${u}: ${error}`);
      continue;
    }
    const body = await text(res);
    const parsed = json(body);
    if (res.status === 200 && parsed && typeof parsed === 'object') {
      metadata = parsed;
      where = u;
      break;
    }
    tried.push(`${u}: HTTP ${res.status}${res.status === 200 ? ' (not JSON)' : ''}`);
  }
  const TITLE = 'Protected-resource metadata (RFC 9728)';
  if (!metadata) {
    steps.push(failed('resource-metadata', TITLE, 'resource-metadata-missing', tried.join('; ')));
    return { steps };
  }
  const notes = tried.length ? { warning: `not at ${tried.join('; ')}` } : {};
  if (challenge.resourceMetadata && where !== new URL(challenge.resourceMetadata, ctx.url).href) {
    notes.warning = `the header's resource_metadata URL failed (${tried[0]}); found at ${where}`;
  }
  steps.push(passed('resource-metadata', TITLE, `found at ${where}`, notes));

  const RTITLE = 'resource is this server\'s URL (RFC 9728 §3.3, RFC 8707)';
  const declared = metadata.resource;
  let resource = canonical(ctx.url);
  if (typeof declared !== 'string' || !declared) {
    steps.push(failed('resource', RTITLE, 'resource-mismatch', `the metadata has no \`resource\`; expected "${canonical(ctx.url)}"`));
  } else if (canonical(declared) === canonical(ctx.url)) {
    resource = declared;
    steps.push(passed('resource', RTITLE, `resource "${declared}"`));
  } else if (covers(declared, ctx.url)) {
    // The SDK clients (the ones Claude and ChatGPT build on) accept a resource whose path is a
    // prefix of the URL; RFC 9728 asks identical. Works, so a note rather than a fault.
    resource = declared;
    steps.push(passed('resource', RTITLE, `resource "${declared}" covers "${canonical(ctx.url)}"`, { warning: 'a prefix of the server\'s URL, not the URL itself: the SDK clients accept it, a strict RFC 9728 client does not' }));
  } else {
    steps.push(failed('resource', RTITLE, 'resource-mismatch', `the metadata says resource "${declared}", but the server's URL is "${canonical(ctx.url)}"`));
  }

  const ATITLE = 'authorization_servers present';
  const issuers = Array.isArray(metadata.authorization_servers) ? metadata.authorization_servers.filter((s) => typeof s === 'string' && s) : [];
  if (!issuers.length) {
    steps.push(failed('authorization-servers', ATITLE, 'no-authorization-servers', `authorization_servers: ${clip(JSON.stringify(metadata.authorization_servers ?? null))}`));
    return { steps, resource };
  }
  steps.push(passed('authorization-servers', ATITLE, `${issuers.join(', ')}${issuers.length > 1 ? ' (the doctor uses the first)' : ''}`));
  return { steps, resource, issuers, scopes: metadata.scopes_supported };
}

export const notReached = (id, title, why) => skipped(id, title, why);
