//! `mcp-edge import-openapi`: an OpenAPI document's operations become one server's tools. This
//! module chooses the operations, names the tools, and places them in a configuration; the
//! mapping of one operation is operation.mjs's.
import { createHash } from 'node:crypto';
import picomatch from 'picomatch';
import { MAX_NAME, mapOperation, serverUrl } from './operation.mjs';
import { readDocument } from './read.mjs';
import { secretName, securitySchemes } from './security.mjs';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const FILTER_KINDS = ['tag', 'operation', 'path', 'method'];

/**
 * Imports `source` (a file or URL) into `config` (parsed; a new one when undefined). Returns
 * `{ config, server, added, replaced: [names], skipped: [{operation, reason}], secrets: [{name, how}], notes }`.
 */
export async function importOpenApi(source, options = {}, config = { servers: [] }) {
  if (options.catalog && options.code) throw new Error('--catalog and --code are two ways of serving the tools: choose one');
  const { doc, version } = await readDocument(source);
  const include = parseFilters(options.include ?? []);
  const exclude = parseFilters(options.exclude ?? []);
  const title = doc.info?.title ?? 'api';

  config.servers ??= [];
  const name = options.server ?? slug(title);
  let server = config.servers.find((s) => s.name === name);
  const created = !server;
  if (!server) {
    server = { route: options.route ?? (config.servers.some((s) => (s.route ?? '/mcp') === '/mcp') ? `/${slug(name)}/mcp` : '/mcp'), name, version: String(doc.info?.version ?? '1.0.0') };
    if (doc.info?.title) server.title = String(doc.info.title);
    server.tools = [];
    config.servers.push(server);
  } else if (options.route && options.route !== (server.route ?? '/mcp')) {
    throw new Error(`server "${name}" already exists at ${server.route ?? '/mcp'}; leave out --route to add to it`);
  }
  server.tools ??= [];

  const notes = [];
  const baseUrl = options.baseUrl ?? defaultBaseUrl(doc, source, secretName(options.secretPrefix ?? slug(name), 'BASE_URL'), notes);
  const schemes = securitySchemes(doc, options.secretPrefix ?? slug(name), { connections: options.connections !== false });
  // The document's named schemas, by object (the dereferenced document shares them): a large
  // tool refers to them as `$defs` by these names.
  const schemaNames = new Map(Object.entries(doc.components?.schemas ?? {}).filter(([, s]) => s && typeof s === 'object').map(([n, s]) => [s, n]));
  const ctx = { baseUrl, baseUrlGiven: options.baseUrl !== undefined, security: schemes, absolute: (url) => absoluteUrl(url, source), schemaNames };
  const usedSchemes = new Set();
  // With `replace`, a tool whose name the import would give again is replaced in place, so
  // importing a newer version of a document updates its tools instead of adding them twice.
  const existing = new Map(server.tools.map((t, i) => [t.name, i]));
  const taken = new Set(options.replace ? [] : existing.keys());
  const replaced = [];
  const added = [];
  const skipped = [];
  const scopes = {}; // scheme → the scopes its imported operations require
  let operations = 0;
  for (const [path, pathItem] of Object.entries(doc.paths ?? {})) {
    if (!pathItem || typeof pathItem !== 'object') continue;
    for (const method of Object.keys(pathItem).filter((k) => METHODS.includes(k.toLowerCase()))) {
      const op = pathItem[method] ?? {};
      const label = `${op.operationId ?? `${method.toUpperCase()} ${path}`}`;
      const where = `${method.toUpperCase()} ${path}`;
      if (!selected({ op, path, method }, include, exclude)) continue;
      operations++;
      const mapped = mapOperation({ method: method.toLowerCase(), path, pathItem, op, doc, ctx });
      if (mapped.skipped) {
        skipped.push({ operation: label, where, reason: mapped.skipped });
        continue;
      }
      const { tool } = mapped;
      const toolName = uniqueName(`${options.prefix ?? ''}${tool.nameHint}`, taken);
      delete tool.nameHint;
      const named = { name: toolName, ...tool };
      if (options.retries && ['GET', 'HEAD', 'PUT', 'DELETE'].includes(tool.http.method)) named.retry = { attempts: options.retries };
      if (options.outputSchema === false) delete named.outputSchema;
      if (options.replace && existing.has(toolName)) {
        server.tools[existing.get(toolName)] = named;
        replaced.push(toolName);
      } else server.tools.push(named);
      added.push(named);
      for (const note of mapped.notes) notes.push(`${toolName}: ${note}`);
      for (const scheme of mapped.schemes) usedSchemes.add(scheme);
      for (const [scheme, list] of Object.entries(mapped.scopes ?? {})) for (const scope of list) (scopes[scheme] ??= new Set()).add(scope);
    }
  }
  if (operations === 0) throw new Error(`no operation of ${source} matches the filters${Object.keys(include).length ? ` (${(options.include ?? []).join(', ')})` : ''}: nothing imported`);
  // Credentials in cleartext to a host on the internet are worth a word before anything is sent.
  const cleartext = new Set(added.filter((t) => /^http:\/\//i.test(t.http.url) && /\{env\./.test(JSON.stringify([t.http.headers, t.http.query, t.http.cookies])) && !isLocal(literalHost(t.http.url))).map((t) => literalHost(t.http.url)));
  for (const host of cleartext) notes.push(`credentials would go to ${host} over plain http: pass --base-url https://… if the API serves https`);

  if (options.pageSize) server.limits = { ...server.limits, toolsPageSize: options.pageSize };
  if (options.catalog) server.toolDiscovery = 'catalog';
  if (options.code) server.toolDiscovery = 'code';
  if (created) {
    const host = literalHost(baseUrl);
    if (host && isLocal(host)) server.privateUpstreams = [host.replace(/^\[|\]$/g, '')];
  }
  const connections = placeConnections(config, server, created, [...usedSchemes].filter((s) => schemes[s].connection), schemes, scopes, options.clientIds ?? {}, title, notes);
  const secrets = [...usedSchemes].map((s) => ({ name: schemes[s].secret, scheme: s, how: schemes[s].how }));
  return { config, server, created, version, title, operations, added, replaced, skipped, secrets, notes, connections };
}

/**
 * The connections the imported tools name, added to (or updated in) the top-level `connections`:
 * endpoints from the document, the scopes the imported operations require, the client secret by
 * name. The client id is the OAuth app's at the provider, which only the user has: given with
 * `clientIds` (scheme → id), kept from an earlier import, or asked for in a note; never a
 * placeholder that would look configured.
 */
function placeConnections(config, server, created, used, schemes, scopes, clientIds, title, notes) {
  const placed = [];
  for (const scheme of used) {
    const skeleton = schemes[scheme].connection;
    const existing = (config.connections ??= []).find((c) => c.name === skeleton.name);
    const connection = { name: skeleton.name, title: used.length > 1 ? `${title} (${scheme})` : title, ...skeleton };
    delete connection.clientSecret;
    const clientId = clientIds[scheme] ?? clientIds['*'] ?? existing?.clientId;
    if (clientId) connection.clientId = clientId;
    connection.clientSecret = skeleton.clientSecret;
    const wanted = [...(scopes[scheme] ?? [])];
    if (wanted.length) connection.scopes = wanted;
    const hosts = [connection.issuer, connection.authorizationEndpoint, connection.tokenEndpoint].map(literalHost).filter((h) => h && isLocal(h)).map((h) => h.replace(/^\[|\]$/g, ''));
    if (hosts.length) connection.privateHosts = [...new Set(hosts)];
    if (existing) Object.assign(existing, connection);
    else config.connections.push(connection);
    placed.push(connection);
    const provider = literalHost(connection.issuer ?? connection.authorizationEndpoint ?? connection.tokenEndpoint);
    if (!clientId) {
      notes.push(`connection "${connection.name}": register an OAuth app at ${provider}${connection.grant === 'authorization_code' ? ' with the redirect URI https://<your worker>/connections/callback' : ''}, then give its client id (--client-id ${scheme}=ID, or "clientId" in the connection) and its secret (npx wrangler secret put ${connection.clientSecret})`);
    } else {
      notes.push(`connection "${connection.name}": put the OAuth app's client secret in ${connection.clientSecret} (npx wrangler secret put ${connection.clientSecret})`);
    }
    if (connection.grant === 'authorization_code') {
      // Each user connects their own account: the server must know who calls.
      if (created && config.oauth && !server.auth) server.auth = { oauth: true };
      if (!config.oauth) notes.push(`connection "${connection.name}" is each user's own: add the top-level "oauth" sign-in (docs/oauth.md) and "auth": {"oauth": true} on server "${server.name}"`);
      else if (!server.auth) notes.push(`connection "${connection.name}" is each user's own: server "${server.name}" needs an auth that says who calls, such as "auth": {"oauth": true}`);
    }
  }
  if (config.connections && !config.connections.length) delete config.connections;
  return placed;
}

/** `tag:pets`, `operation:listPets`, `path:/pets/*`, `method:get` → `{kind: [values]}`. */
export function parseFilters(specs) {
  const filters = {};
  for (const spec of specs.flatMap((s) => String(s).split(',')).filter(Boolean)) {
    const i = spec.indexOf(':');
    const kind = spec.slice(0, i);
    if (i < 0 || !FILTER_KINDS.includes(kind)) throw new Error(`filter ${JSON.stringify(spec)}: expected ${FILTER_KINDS.map((k) => `${k}:…`).join(', ')}`);
    (filters[kind] ??= []).push(spec.slice(i + 1));
  }
  return filters;
}

/** Kept when every kind of include has a match (tags OR tags, AND the methods…) and no exclude matches. */
function selected({ op, path, method }, include, exclude) {
  const matches = (kind, value) => {
    if (kind === 'tag') return (op.tags ?? []).some((t) => String(t).toLowerCase() === value.toLowerCase());
    if (kind === 'operation') return op.operationId === value;
    if (kind === 'method') return method.toLowerCase() === value.toLowerCase();
    return picomatch.isMatch(path, value);
  };
  const included = Object.entries(include).every(([kind, values]) => values.some((v) => matches(kind, v)));
  const excluded = Object.entries(exclude).some(([kind, values]) => values.some((v) => matches(kind, v)));
  return included && !excluded;
}

/**
 * The tools' base URL: the document's first server, made absolute. A document with none, or a
 * relative one, read from a file has no URL to resolve against (OpenAPI resolves against the
 * document's own): the base is then a variable the user sets, `{+env.<SERVER>_BASE_URL}`, named in
 * a note, rather than a refusal.
 */
function defaultBaseUrl(doc, source, variable, notes) {
  const server = doc.servers?.[0];
  // OpenAPI: no `servers` means one whose URL is `/`, relative to the document.
  let url = '/';
  try {
    if (server?.url) url = serverUrl(server);
    return absoluteUrl(url, source);
  } catch (e) {
    if (!e.relative) throw new Error(`${e.message}: pass --base-url`);
  }
  notes.push(`the document's server URL ${JSON.stringify(url)}${server?.url ? '' : ' (it names none)'} is relative to where the document is served, which a file does not say: set ${variable} to the API's base URL (npx wrangler secret put ${variable}, or [vars] in wrangler.toml; for dev, ${variable}=https://… in .dev.vars), or import again with --base-url`);
  return `{+env.${variable}}`;
}

/**
 * A server URL made absolute: a relative one against the document's own URL, if it has one; a
 * scheme-relative one (`//host/path`) from a file gets https. Any scheme but http and https
 * (`javascript:`, `file:`) is refused. Throws an error marked `relative` when only the
 * document's URL could say.
 */
function absoluteUrl(url, source) {
  if (/^https?:\/\//i.test(url)) return url;
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) throw new Error(`the document's server URL ${JSON.stringify(url)} is not http or https`);
  if (/^https?:\/\//i.test(source)) return new URL(url, source).href;
  if (url.startsWith('//')) return new URL(`https:${url}`).href;
  const e = new Error(`the document's server URL ${JSON.stringify(url)} is relative`);
  e.relative = true;
  throw e;
}

const isLocal = (host) => /^(127\.|localhost$|\[::1\]$)/.test(host ?? '');

function literalHost(url) {
  const m = /^https?:\/\/([^/:?#]+|\[[^\]]+\])/i.exec(url);
  return m?.[1];
}

/** Lower-case words joined by `-`: a server's name and route from the document's title. */
export function slug(text) {
  return String(text).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'api';
}

/**
 * A tool name valid everywhere MCP tools go: `A-Z a-z 0-9 _ -`, at most 64 characters (the
 * tightest client limit), unique in the server. A cut name keeps a hash of the whole one.
 */
export function uniqueName(wanted, taken) {
  let base = String(wanted).replace(/[^A-Za-z0-9_-]+/g, '_').replace(/_+/g, '_').replace(/^_|_$/g, '') || 'operation';
  if (base.length > MAX_NAME) base = `${base.slice(0, MAX_NAME - 9)}_${createHash('sha256').update(base).digest('hex').slice(0, 8)}`;
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base.slice(0, MAX_NAME - String(i).length - 1)}_${i}`;
  taken.add(name);
  return name;
}
