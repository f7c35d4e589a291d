//! One OpenAPI operation turned into one mcp-edge tool, or into the reason it cannot be one.
//! Every rule here is written down in docs/openapi.md; a change to one changes both.
import { UNDECLARED_BODY } from './read.mjs';
import { schemaScope, toJsonSchema, trimText, typesOf } from './schema.mjs';

export const MAX_NAME = 64;
const MAX_TITLE = 120;
const MAX_DESCRIPTION = 1000;
const DEFS_BUDGET_WORDS = 'the budget of a tool\'s $defs';
/** OpenAPI: header parameters with these names are ignored; the request's own handling sets them. */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
const LOCATIONS = ['path', 'query', 'header', 'cookie'];
/** RFC 9110's token (`1*tchar`): the only header names SEP-2243 lets `x-mcp-header` carry. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * Headers never mirrored as `Mcp-Param-*` even when the document declares them: the message's
 * framing and routing, which the request's own handling sets, and credentials, which the
 * 2026-07-28 spec says not to expose to intermediaries.
 */
const UNMIRRORED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'proxy-connection', 'cookie', 'set-cookie', 'expect', 'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip', 'cf-connecting-ip', 'mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'last-event-id']);
/** A header name or description that says it carries a secret (`X-Api-Key`, `X-Auth-Token`). */
const SENSITIVE = /auth|token|secret|passw|pwd|api[-_]?key|session|credential|signature|cookie/i;
/** JavaScript's safe integers: the range SEP-2243 allows an integer header argument. */
const SAFE = Number.MAX_SAFE_INTEGER;

/** Thrown inside the mapping: the operation is skipped with this reason. */
class Skip extends Error {}
const skip = (reason) => {
  throw new Skip(reason);
};

/**
 * Maps an operation. `ctx`: `{ baseUrl, security: {schemeName: requestParts}, securityNames }`
 * (see security.mjs). Returns `{ tool, notes }` or `{ skipped: reason }`; the tool has no final
 * name yet (`nameHint` is its base), the caller makes names unique.
 */
export function mapOperation({ method, path, pathItem, op, doc, ctx }) {
  try {
    return build({ method, path, pathItem, op, doc, ctx });
  } catch (e) {
    if (e instanceof Skip) return { skipped: e.message };
    throw e;
  }
}

function build({ method, path, pathItem, op, doc, ctx }) {
  const notes = [];
  const METHOD = method.toUpperCase();
  if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'].includes(METHOD)) skip(`method ${METHOD} is not supported`);

  const args = new Arguments();
  // Named schemas a large tool keeps as `$defs`: one set for its arguments, one for its reply.
  const names = ctx.schemaNames ?? new Map();
  const inputScope = schemaScope(names);
  const http = { method: METHOD, url: '' };
  const headers = {};
  const query = {};
  const cookies = {};

  // Security first: the parameters its schemes set are credentials, never arguments.
  const security = chooseSecurity(op.security ?? doc.security ?? [], ctx.security);
  const byScheme = { headers: new Set(), query: new Set(), cookies: new Set() };
  for (const name of security.schemes) {
    for (const where of Object.keys(byScheme)) for (const k of Object.keys(ctx.security[name].parts[where] ?? {})) byScheme[where].add(where === 'headers' ? k.toLowerCase() : k);
  }
  const setBySecurity = (p) => (p.in === 'header' ? byScheme.headers.has(p.name.toLowerCase()) : p.in === 'query' ? byScheme.query.has(p.name) : p.in === 'cookie' && byScheme.cookies.has(p.name));

  // Parameters: the path item's, overridden by the operation's of the same name and location.
  const params = new Map();
  for (const p of [...(pathItem.parameters ?? []), ...(op.parameters ?? [])]) {
    if (p && typeof p === 'object' && p.in && p.name) params.set(`${p.in}:${p.name}`, p);
  }
  const ordered = [...params.values()].filter((p) => LOCATIONS.includes(p.in) || skip(`parameter "${p.name}" is in "${p.in}"`));
  ordered.sort((a, b) => LOCATIONS.indexOf(a.in) - LOCATIONS.indexOf(b.in));
  const pathArgs = new Map();
  const mirrored = new Set();
  for (const p of ordered) {
    if (p.in === 'header' && IGNORED_HEADERS.has(p.name.toLowerCase())) continue;
    if (setBySecurity(p)) {
      notes.push(`${p.in} parameter "${p.name}" is the security scheme's credential: sent from its secret`);
      continue;
    }
    const required = p.in === 'path' || p.required === true;
    const problem = parameterProblem(p);
    if (problem) {
      if (required) skip(`${p.in} parameter "${p.name}": ${problem}`);
      notes.push(`optional ${p.in} parameter "${p.name}" left out: ${problem}`);
      continue;
    }
    let schema = toJsonSchema(p.schema, 'input', notes, [], inputScope);
    // A required parameter must be sent, and `null` would leave it out: it is not a value here.
    if (required) schema = withoutNull(schema);
    if (p.description && !schema.description) schema.description = trimText(p.description, 500);
    if (p.deprecated) schema.deprecated = true;
    if (p.in === 'path' && typesOf(schema).includes('string') && schema.minLength === undefined) schema.minLength = 1;
    const arg = args.add(p.name, p.in, schema, required);
    const { style, explode } = serialization(p);
    if (p.in === 'path') pathArgs.set(p.name, pathExpression(arg, p.name, style, explode));
    else if (p.in === 'query') query[p.name] = queryEntry(arg, style, explode, p.allowReserved);
    else if (p.in === 'header') {
      setHeader(headers, p.name, `{${arg}}`);
      markHeader(args.properties[arg], p, mirrored);
    } else cookies[p.name] = `{${arg}}`;
  }

  // The URL: the base, then the path with each {name} as an RFC 6570 expression.
  const own = op.servers?.length ? op.servers : pathItem.servers?.length ? pathItem.servers : null;
  let base = ctx.baseUrl;
  if (own && !ctx.baseUrlGiven) {
    try {
      base = ctx.absolute(serverUrl(own[0]));
    } catch (e) {
      skip(`its own server: ${e.message}`);
    }
  }
  const pathTemplate = path.replace(/\{([^}]*)\}/g, (_, name) => pathArgs.get(name) ?? skip(`path parameter "${name}" is not declared`));
  http.url = `${base.replace(/\/+$/, '')}${pathTemplate}`;

  // The body.
  if (op[UNDECLARED_BODY]) skip('its body has no declared media type (Swagger 2.0 without consumes)');
  const body = requestBody(op, METHOD);
  if (body.skip) skip(body.skip);
  if (body.media) {
    const schema = toJsonSchema(body.schema, 'input', notes, [], inputScope);
    const flat = flattenable(schema);
    if (flat) {
      const template = {};
      const required = new Set(flat.required ?? []);
      for (const [prop, propSchema] of Object.entries(flat.properties)) {
        const problem = body.form && formProblem(propSchema, body.encoding?.[prop]);
        if (problem) {
          if (required.has(prop)) skip(`form field "${prop}": ${problem}`);
          notes.push(`optional form field "${prop}" left out: ${problem}`);
          continue;
        }
        const arg = args.add(prop, 'body', propSchema, required.has(prop));
        template[prop] = `{${arg}}`;
      }
      http.body = template;
    } else {
      if (body.form) skip('the form body is not an object with properties');
      // A whole-body argument cannot be left out of the request (it would be sent as null), so
      // it is required even where the document makes the body optional.
      if (!body.required) notes.push('the optional request body is a required argument: mcp-edge sends a body whenever the operation has one');
      const arg = args.add('body', 'body', schema, true, true);
      http.body = `{${arg}}`;
    }
    if (body.form) http.bodyType = 'form';
    if (body.media !== 'application/json' && body.media !== 'application/x-www-form-urlencoded') setHeader(headers, 'Content-Type', body.media);
  } else if (!['GET', 'HEAD'].includes(METHOD)) {
    http.bodyType = 'none';
  }

  if (security.problem) skip(security.problem);
  // A scheme that is a connection: the tool names it, and mcp-edge adds the user's token.
  const connected = security.schemes.filter((name) => ctx.security[name].connection);
  if (connected.length > 1) skip(`its security needs ${connected.length} OAuth connections at once (${connected.join(', ')}); a tool uses one`);
  for (const name of security.schemes) {
    const parts = ctx.security[name].parts;
    for (const [k, v] of Object.entries(parts.headers ?? {})) setHeader(headers, k, v);
    for (const [k, v] of Object.entries(parts.query ?? {})) query[k] = v;
    for (const [k, v] of Object.entries(parts.cookies ?? {})) cookies[k] = v;
  }

  // A reply offered as JSON among other types is asked for as JSON: it then maps to structuredContent.
  const replyTypes = [...new Set(Object.entries(op.responses ?? {}).filter(([c]) => /^2/.test(c)).flatMap(([, r]) => Object.keys(r?.content ?? {})))];
  const jsonReply = replyTypes.find(isJson);
  if (jsonReply && replyTypes.length > 1 && !Object.keys(headers).some((h) => h.toLowerCase() === 'accept')) setHeader(headers, 'Accept', jsonReply);
  if (Object.keys(headers).length) http.headers = headers;
  if (Object.keys(query).length) http.query = query;
  if (Object.keys(cookies).length) http.cookies = cookies;

  const tool = { nameHint: op.operationId ? op.operationId : `${method}_${path}` };
  if (op.summary) tool.title = trimText(oneLine(op.summary), MAX_TITLE);
  tool.description = describe(op, METHOD, path);
  tool.inputSchema = args.schema();
  if (Object.keys(inputScope.defs).length) tool.inputSchema.$defs = inputScope.defs;
  if (inputScope.stubs) notes.push(`${inputScope.stubs} of the schemas its arguments reach are not described (past ${DEFS_BUDGET_WORDS}): they accept any value of their type, which the API may refuse`);
  const output = outputSchema(op, notes, names);
  if (output) tool.outputSchema = output;
  const hints = annotations(METHOD);
  if (hints) tool.annotations = hints;
  if (Array.isArray(op.tags) && op.tags.length) tool.tags = op.tags.map(String).filter((t) => t && t.length <= 64).slice(0, 32);
  if (connected.length) tool.auth = { connection: ctx.security[connected[0]].connection.name };
  tool.http = http;
  if (tool.tags && !tool.tags.length) delete tool.tags;
  return { tool, notes, schemes: security.schemes, scopes: security.scopes };
}

/**
 * The security alternative used: the first whose schemes are all supported, preferring one that
 * sends credentials over the anonymous `{}`. `{ schemes, scopes }`, or `{ problem }` when none
 * is usable.
 */
function chooseSecurity(requirement, schemes) {
  if (!Array.isArray(requirement) || requirement.length === 0) return { schemes: [], scopes: {} };
  const usable = requirement.filter((alt) => Object.keys(alt ?? {}).every((name) => schemes[name]?.parts));
  const chosen = usable.find((alt) => Object.keys(alt).length > 0) ?? usable[0];
  // The scopes each scheme needs for this operation (OAuth 2 and OpenID Connect list them).
  if (chosen) return { schemes: Object.keys(chosen), scopes: Object.fromEntries(Object.entries(chosen).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : []])) };
  const why = Object.keys(requirement[0] ?? {}).map((name) => schemes[name]?.problem ?? `security scheme "${name}" is not declared`);
  return { schemes: [], problem: why.join('; ') };
}

/**
 * Marks a header parameter's argument with `x-mcp-header` (SEP-2243), so 2026-07-28 clients
 * mirror it in an `Mcp-Param-{name}` header and intermediaries can route on it. The name is the
 * document's header name, whatever the argument is called. Marked only when the spec allows it:
 * the name a token, unique in any case, the type one of string, integer or boolean (integers
 * bounded to the safe range), and nothing that looks like a credential or frames the message.
 */
function markHeader(schema, p, mirrored) {
  const name = String(p.name);
  const lower = name.toLowerCase();
  if (!TOKEN.test(name) || mirrored.has(lower) || UNMIRRORED.has(lower) || SENSITIVE.test(name)) return;
  if (schema.format === 'password' || schema.writeOnly === true || p.schema?.format === 'password') return;
  if (!['string', 'integer', 'boolean'].includes(schema.type)) return;
  if (schema.type === 'integer') {
    const bounds = [schema.minimum, schema.exclusiveMinimum, schema.maximum, schema.exclusiveMaximum];
    if (bounds.some((v) => v !== undefined && !(typeof v === 'number' && Math.abs(v) <= SAFE))) return;
    if (schema.minimum === undefined && schema.exclusiveMinimum === undefined) schema.minimum = -SAFE;
    if (schema.maximum === undefined && schema.exclusiveMaximum === undefined) schema.maximum = SAFE;
  }
  mirrored.add(lower);
  schema['x-mcp-header'] = name;
}

/** Sets a header, replacing one of the same name in any case: HTTP names are case-insensitive. */
function setHeader(headers, name, value) {
  for (const k of Object.keys(headers)) if (k.toLowerCase() === name.toLowerCase()) delete headers[k];
  headers[name] = value;
}

/** The schema without `null` among its types or values. */
function withoutNull(schema) {
  const out = { ...schema };
  if (Array.isArray(out.type)) {
    out.type = out.type.filter((t) => t !== 'null');
    if (out.type.length === 1) out.type = out.type[0];
  }
  if (Array.isArray(out.enum)) out.enum = out.enum.filter((v) => v !== null);
  if (Array.isArray(out.anyOf) && out.anyOf.some((b) => b?.type === 'null')) {
    const rest = out.anyOf.filter((b) => b?.type !== 'null');
    if (rest.length === 1 && Object.keys(out).length === 1) return rest[0];
    out.anyOf = rest;
  }
  return out;
}

/** The input schema's properties: names made valid template variables, collisions renamed. */
class Arguments {
  constructor() {
    this.properties = {};
    this.required = [];
  }

  /** Adds one argument for `name` from `location`; returns the argument's name. */
  add(name, location, schema, required, whole = false) {
    let arg = variableName(name);
    if (this.properties[arg]) {
      arg = variableName(`${name}_${location}`);
      for (let i = 2; this.properties[arg]; i++) arg = variableName(`${name}_${location}_${i}`);
    }
    const described = { ...schema };
    if (whole) described.description = described.description ? `The request body. ${described.description}` : 'The request body.';
    else if (arg !== name || location === 'header' || location === 'cookie') {
      const where = location === 'body' ? `request body property "${name}"` : `${location} parameter "${name}"`;
      described.description = described.description ? `${described.description} (Sent as the ${where}.)` : `Sent as the ${where}.`;
    }
    this.properties[arg] = described;
    if (required) this.required.push(arg);
    return arg;
  }

  schema() {
    const schema = { type: 'object', properties: this.properties };
    if (this.required.length) schema.required = this.required;
    return schema;
  }
}

/** An RFC 6570 variable name: letters, digits and `_`; anything else becomes `_`. */
function variableName(name) {
  let v = String(name).replace(/[^A-Za-z0-9_]/g, '_');
  if (!v || /^[0-9]/.test(v)) v = `_${v}`;
  return v;
}

/** Why a parameter cannot be sent faithfully, or undefined. */
function parameterProblem(p) {
  if (p.content) return 'it is serialized by a media type (content), which is not supported';
  // swagger2openapi marks a 2.0 collectionFormat it could not carry over (tsv, pipes in a path).
  if (p['x-s2o-warning']) return `its Swagger 2.0 serialization has no OpenAPI 3 equivalent (${p['x-s2o-warning']})`;
  const schema = p.schema ?? {};
  const types = typesOf(schema);
  const { style } = serialization(p);
  const items = schema.items ?? {};
  if (types.includes('array') && (typesOf(items).some((t) => t === 'object' || t === 'array') || items.properties)) return 'a list of objects or lists has no OpenAPI serialization';
  if (types.includes('object')) {
    const nested = Object.values(schema.properties ?? {}).some((s) => typesOf(s).some((t) => t === 'object' || t === 'array'));
    if (nested) return 'an object with nested objects or lists has no OpenAPI serialization';
    if (p.in === 'header' || p.in === 'cookie') return `objects in a ${p.in} are not supported`;
  }
  if (p.in === 'path' && !['simple', 'label', 'matrix'].includes(style)) return `style "${style}" is not a path style`;
  if (p.in === 'query' && !['form', 'spaceDelimited', 'pipeDelimited', 'deepObject'].includes(style)) return `style "${style}" is not a query style`;
  if (p.in === 'query' && style === 'deepObject' && (p.explode === false || !types.includes('object'))) return 'deepObject needs an exploded object';
  if ((p.in === 'header' && style !== 'simple') || (p.in === 'cookie' && style !== 'form')) return `style "${style}" is not supported in a ${p.in}`;
  if (p.in === 'cookie' && p.explode === true && types.includes('array')) return 'exploded lists in a cookie are not supported';
  return undefined;
}

/** A parameter's style and explode, OpenAPI's defaults filled in: `form`, exploded, in the
 *  query and cookies; `simple` elsewhere. */
function serialization(p) {
  const style = p.style ?? (p.in === 'query' || p.in === 'cookie' ? 'form' : 'simple');
  return { style, explode: p.explode ?? style === 'form' };
}

/** The path expression for a path parameter: `{id}`, `{id*}`, `{.id}` (label), `{;id}` (matrix). */
function pathExpression(arg, name, style, explode) {
  if (style === 'matrix' && arg !== name) skip(`matrix path parameter "${name}" is not a valid template variable name`);
  const op = { simple: '', label: '.', matrix: ';' }[style];
  return `{${op}${arg}${explode ? '*' : ''}}`;
}

function queryEntry(arg, style, explode, allowReserved) {
  const value = `{${arg}}`;
  const defaultExplode = style === 'form';
  if (style === 'form' && explode === defaultExplode && !allowReserved) return value;
  const entry = { value };
  if (style !== 'form') entry.style = style;
  if (explode !== defaultExplode) entry.explode = explode;
  if (allowReserved) entry.allowReserved = true;
  return entry;
}

/** A server object's URL with its variables' defaults filled in. */
export function serverUrl(server) {
  return String(server.url).replace(/\{([^}]+)\}/g, (_, v) => {
    const d = server.variables?.[v]?.default;
    if (d === undefined) throw new Error(`server variable "${v}" has no default`);
    return String(d);
  });
}

const isJson = (media) => /^application\/(.+\+)?json$/i.test(media.split(';')[0].trim()) || /^application\/json/i.test(media);

/** The request body's media type and schema, or why it cannot be sent. */
function requestBody(op, METHOD) {
  const rb = op.requestBody;
  if (!rb || !rb.content || Object.keys(rb.content).length === 0) return {};
  const types = Object.keys(rb.content);
  const json = types.find(isJson);
  const form = types.find((t) => t.split(';')[0].trim().toLowerCase() === 'application/x-www-form-urlencoded');
  const media = json ?? form;
  if (!media) {
    const multipart = types.find((t) => t.toLowerCase().startsWith('multipart/'));
    if (multipart) return { skip: `its only body is ${multipart.split(';')[0]}, which tools cannot send` };
    return { skip: `its body is ${types.map((t) => t.split(';')[0]).join(' or ')}, which tools cannot send (JSON and form bodies can)` };
  }
  if (METHOD === 'GET' || METHOD === 'HEAD') {
    if (rb.required) return { skip: `a ${METHOD} request with a required body` };
    return {};
  }
  const schema = rb.content[media].schema ?? {};
  if (json && containsBinary(schema)) return { skip: 'its JSON body holds binary data (format: binary)' };
  return { media: media.split(';')[0].trim(), schema, required: rb.required === true, form: media === form && !json, encoding: rb.content[media].encoding };
}

function containsBinary(schema, seen = new Set()) {
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return false;
  seen.add(schema);
  if (schema.format === 'binary' && typesOf(schema).includes('string')) return true;
  return Object.values(schema.properties ?? {}).some((s) => containsBinary(s, seen)) || containsBinary(schema.items, seen);
}

/**
 * The body's properties, when they can be the tool's own arguments: an object schema with
 * `properties` and nothing that constrains the object as a whole (composition, `not`).
 * `allOf` of such objects is merged first.
 */
function flattenable(schema) {
  let s = schema;
  const outerOnly = Object.keys(s).every((k) => ['allOf', 'required', 'type', 'description', 'title'].includes(k));
  if (Array.isArray(s.allOf) && outerOnly && s.allOf.every((m) => m.properties && !m.allOf && !m.anyOf && !m.oneOf && !m.not)) {
    const properties = {};
    const required = [...(s.required ?? [])];
    for (const m of s.allOf) {
      for (const [k, v] of Object.entries(m.properties)) {
        if (properties[k]) return null;
        properties[k] = v;
      }
      required.push(...(m.required ?? []));
    }
    s = { type: 'object', properties, required };
  }
  const types = typesOf(s);
  if (types.length !== 1 || types[0] !== 'object' || !s.properties || Object.keys(s.properties).length === 0) return null;
  if (s.anyOf || s.oneOf || s.allOf || s.not || s.minProperties || s.maxProperties) return null;
  // A required name with no property of its own could not be sent from the arguments.
  if ((s.required ?? []).some((name) => !(name in s.properties))) return null;
  return s;
}

/**
 * Why a form field cannot be sent, or undefined: form bodies carry scalars, and lists of scalars
 * as repeated keys (style `form`, exploded, the default).
 */
function formProblem(schema, encoding) {
  const types = typesOf(schema);
  if (types.includes('object') || (types.includes('array') && typesOf(schema.items).some((t) => t === 'object' || t === 'array'))) return 'an object or a list of them, which form bodies cannot carry';
  // A form field's encoding serializes as a query parameter would (OpenAPI's Encoding Object).
  const { style, explode } = serialization({ in: 'query', ...encoding });
  if (types.includes('array') && (style !== 'form' || !explode)) return `a list encoded as ${style}${explode ? '' : ' unexploded'}, which form bodies cannot carry (only repeated keys)`;
  return undefined;
}

function describe(op, METHOD, path) {
  const text = op.description ?? op.summary ?? '';
  const lead = op.deprecated ? 'Deprecated. ' : '';
  const body = trimText(`${lead}${text}`, MAX_DESCRIPTION);
  return `${body ? `${body}\n\n` : ''}HTTP: ${METHOD} ${path}`;
}

const oneLine = (s) => String(s).replace(/\s+/g, ' ').trim();

/**
 * The success reply's schema, when it is a JSON object and the only kind of success: a tool that
 * declares an outputSchema must give structuredContent on every success, so an operation that
 * may also answer 204 or text gets none.
 */
function outputSchema(op, notes, names) {
  const successes = Object.entries(op.responses ?? {}).filter(([code]) => /^2(\d\d|XX)$/i.test(code));
  if (successes.length !== 1) return undefined;
  const content = successes[0][1]?.content ?? {};
  const types = Object.keys(content);
  if (types.length !== 1 || !isJson(types[0])) return undefined;
  const scope = schemaScope(names);
  const schema = toJsonSchema(content[types[0]].schema, 'output', notes, [], scope);
  const t = typesOf(schema);
  if (t.length !== 1 || t[0] !== 'object') return undefined;
  if (!schema.type) schema.type = 'object';
  if (Object.keys(scope.defs).length) schema.$defs = scope.defs;
  return schema;
}

function annotations(METHOD) {
  if (METHOD === 'GET' || METHOD === 'HEAD') return { readOnlyHint: true };
  if (METHOD === 'DELETE') return { destructiveHint: true, idempotentHint: true };
  if (METHOD === 'PUT') return { idempotentHint: true };
  return undefined;
}
