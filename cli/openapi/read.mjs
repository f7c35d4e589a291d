//! Reads an OpenAPI document (3.0, 3.1, or Swagger 2.0 converted to 3.0), from a file or a URL,
//! in JSON or YAML, with every `$ref` resolved. The parsing, conversion and dereferencing are
//! well-kept libraries' (swagger-parser, swagger2openapi), not ours.
import SwaggerParser from '@apidevtools/swagger-parser';
import converter from 'swagger2openapi';

/**
 * Resolves to `{ doc, version, source }`: the dereferenced OpenAPI 3.x document and the version
 * the source declared. A recursive schema stays one shared object that refers to itself, so the
 * schema mapping can cut it at a bounded depth instead of looping.
 */
export async function readDocument(source) {
  let api;
  try {
    api = await SwaggerParser.parse(source, options(source));
  } catch (e) {
    throw new Error(`cannot read ${source}: ${firstLine(e.message)}`);
  }
  if (/^https?:\/\//i.test(source)) restorePorts(api, source);
  const version = api.swagger ?? api.openapi;
  if (api.swagger) {
    if (api.swagger !== '2.0') throw new Error(`${source}: Swagger ${api.swagger} is not supported (2.0, OpenAPI 3.0 and 3.1 are)`);
    markUndeclaredBodies(api);
    // patch: mend the small faults many real 2.0 documents have, as APIs.guru does.
    ({ openapi: api } = await converter.convertObj(api, { patch: true, warnOnly: true, resolveInternal: false }));
  } else if (!/^3\.[01]\./.test(String(api.openapi))) {
    throw new Error(`${source}: OpenAPI ${api.openapi} is not supported (2.0, 3.0 and 3.1 are)`);
  }
  try {
    const doc = await SwaggerParser.dereference(source, api, { ...options(source), dereference: { circular: true } });
    return { doc, version, source };
  } catch (e) {
    throw new Error(`${source}: cannot resolve its $refs: ${firstLine(e.message)}`);
  }
}

const firstLine = (message) => String(message).split('\n')[0];

/**
 * The parser's resolver refuses loopback and private addresses, a guard worth keeping for the
 * `$ref`s a public document names. A document the user fetches from such an address itself (a
 * local dev server's `http://localhost:8000/openapi.json`) may name its neighbours.
 */
function options(source) {
  let host = '';
  try {
    host = /^https?:\/\//i.test(source) ? new URL(source).hostname : '';
  } catch {}
  const local = /^(localhost|127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.|\[::1\]$|\[f[cd])/i.test(host);
  return { resolve: { http: { safeUrlResolver: !local } } };
}

/**
 * swagger-parser 12.1 makes a relative server URL absolute against the document's URL, but
 * without its port (`/api` from `http://localhost:8000/openapi.json` becomes
 * `http://localhost/api`), and a scheme-relative one by pasting it after the host
 * (`//api.example.com/v1` becomes `http://localhost//api.example.com/v1`). This puts the port
 * back on the URLs it rewrote, and resolves the scheme-relative ones as URLs resolve.
 */
function restorePorts(api, source) {
  const from = new URL(source);
  const rewritten = `${from.protocol}//${from.hostname}/`;
  const fix = (servers) => {
    for (const server of Array.isArray(servers) ? servers : []) {
      if (typeof server?.url !== 'string' || !server.url.startsWith(rewritten)) continue;
      const path = server.url.slice(rewritten.length - 1);
      server.url = path.startsWith('//') ? new URL(path, source).href : `${from.origin}${path}`;
    }
  };
  fix(api.servers);
  for (const item of Object.values(api.paths ?? {})) {
    fix(item?.servers);
    for (const op of Object.values(item ?? {})) fix(op?.servers);
  }
}

/** The extension that marks a 2.0 operation whose body has no declared media type. */
export const UNDECLARED_BODY = 'x-mcp-edge-undeclared-body';

/**
 * Marks 2.0 operations that take a body or form fields but declare no `consumes` (nor does the
 * document): the conversion would assume a media type, which the document never promised.
 */
function markUndeclaredBodies(api) {
  for (const item of Object.values(api.paths ?? {})) {
    if (!item || typeof item !== 'object') continue;
    for (const op of Object.values(item)) {
      if (!op || typeof op !== 'object' || Array.isArray(op)) continue;
      // A parameter may be a reference into the document's `parameters`; the rest resolve later.
      const own = (p) => (typeof p?.$ref === 'string' && p.$ref.startsWith('#/parameters/') ? api.parameters?.[decodeURIComponent(p.$ref.slice(13))] : p);
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(own);
      const hasBody = params.some((p) => p && (p.in === 'body' || p.in === 'formData'));
      if (hasBody && !(op.consumes ?? api.consumes)?.length) op[UNDECLARED_BODY] = true;
    }
  }
}
