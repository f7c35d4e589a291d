//! OpenAPI schema objects (3.0's dialect or 3.1's JSON Schema) turned into the JSON Schema that
//! mcp-edge enforces and clients read: `nullable` and 3.0's boolean exclusive bounds rewritten,
//! OpenAPI-only keywords dropped, read-only properties left out of inputs (write-only ones out of
//! outputs), and recursion cut at a bounded depth. A schema too large to inline keeps the
//! document's named schemas as `$defs` instead, as many as a budget allows.

/** The JSON Schema keywords kept; anything else (`xml`, `discriminator`, `x-…`) is dropped. */
const KEPT = new Set([
  'type', 'enum', 'const', 'format', 'default', 'description', 'title', 'deprecated',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'uniqueItems',
  'minProperties', 'maxProperties', 'required',
]);
const SUBSCHEMA = new Set(['items', 'additionalProperties', 'not']);
/** JSON Schema keywords that constrain a value but that mcp-edge's validation does not know. */
const UNENFORCED = new Set(['dependentRequired', 'dependencies', 'dependentSchemas', 'patternProperties', 'propertyNames', 'if', 'then', 'else', 'contains', 'unevaluatedProperties', 'unevaluatedItems']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);

/**
 * Formats that validators of OpenAPI documents check (ajv-formats' definitions) but mcp-edge's
 * own validation does not: an argument's format becomes this pattern too, so a value the API
 * would refuse is refused before the call, where the model can correct it.
 */
const FORMAT_PATTERNS = {
  byte: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$',
  duration: '^P(?!$)((\\d+Y)?(\\d+M)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+S)?)?|(\\d+W)?)$',
  ipv4: '^(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)$',
  hostname: '^(?=.{1,253}\\.?$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\\.?$',
};

/** How many times one schema may appear inside itself before the rest is cut. */
export const RECURSION_DEPTH = 2;
const MAX_DESCRIPTION = 500;
/**
 * Schema objects one conversion may inline. Past it (Microsoft Graph's entities reach hundreds of
 * others, and inlining them all would take gigabytes) the named schemas become `$defs`.
 */
export const INLINE_BUDGET = 2000;
/**
 * Schema objects a tool's `$defs` may hold, nearest first; the named schemas beyond are stubs
 * that say so. A tool's schema stays bounded however large the graph its types reach.
 */
export const DEFS_BUDGET = 200;

/** Thrown by a conversion that went past INLINE_BUDGET. */
class TooLarge extends Error {}

/**
 * The `$defs` of one tool's input (or output) schema: `names` maps the document's named schema
 * objects (`components.schemas`, dereferenced) to their names; the conversions of the tool's
 * parameters and body add the definitions they refer to to `defs`, which the caller places at
 * the schema's root.
 */
export function schemaScope(names) {
  return { names, defs: {}, keys: new Map(), taken: new Set(), queue: [], left: DEFS_BUDGET, stubs: 0 };
}

/**
 * Converts `schema` for `use` (`input`: arguments the client sends; `output`: the reply).
 * `notes` collects what could not carry over (an invalid pattern), for the import's report.
 * With a `scope` (schemaScope), a schema too large to inline refers to `#/$defs/…` instead.
 */
export function toJsonSchema(schema, use, notes = [], stack = [], scope = undefined) {
  if (!scope) return walk(schema, use, notes, stack, {});
  const tried = [];
  try {
    const out = walk(schema, use, tried, stack, { count: { left: INLINE_BUDGET } });
    notes.push(...tried);
    return out;
  } catch (e) {
    if (!(e instanceof TooLarge)) throw e;
  }
  const ref = (obj) => {
    let key = scope.keys.get(obj);
    if (!key) {
      key = defKey(scope.names.get(obj), scope.taken);
      scope.keys.set(obj, key);
      scope.queue.push(obj);
    }
    return { $ref: `#/$defs/${key}` };
  };
  const out = walk(schema, use, notes, stack, { ref, names: scope.names, root: schema });
  // Breadth first: the definitions nearest the tool's own arguments are the ones kept whole.
  while (scope.queue.length) {
    const obj = scope.queue.shift();
    const key = scope.keys.get(obj);
    if (scope.left <= 0) {
      scope.defs[key] = stub(obj, scope.names.get(obj));
      scope.stubs++;
      continue;
    }
    const count = { used: 0 };
    scope.defs[key] = walk(obj, use, notes, [], { ref, names: scope.names, root: obj, count });
    scope.left -= count.used;
  }
  return out;
}

/** A `$defs` key for a schema's name: JSON Pointer-safe, unique in the tool. */
function defKey(name, taken) {
  const base = String(name ?? 'schema').replace(/[^A-Za-z0-9._-]+/g, '_') || 'schema';
  let key = base;
  for (let i = 2; taken.has(key); i++) key = `${base}_${i}`;
  taken.add(key);
  return key;
}

/** A named schema past the budget: its type when it has one plain type, and a word on why. */
function stub(obj, name) {
  const out = { description: `${name}: not described further here (the tool's schema reaches too many others).` };
  if (typeof obj.type === 'string' && obj.nullable !== true) out.type = obj.type;
  return out;
}

/**
 * One schema object converted. `opts`: `count` ({left} inlining a budget, or {used} counting),
 * `ref` (a named schema other than `root` becomes a reference), `names`.
 */
function walk(schema, use, notes, stack, opts) {
  if (schema === true || schema === undefined || schema === null) return {};
  if (schema === false) return { not: {} };
  if (typeof schema !== 'object') return {};
  if (opts.ref && (schema !== opts.root || stack.length > 0) && opts.names.has(schema)) return opts.ref(schema);
  if (opts.count) {
    if (opts.count.left !== undefined && --opts.count.left < 0) throw new TooLarge();
    if (opts.count.used !== undefined) opts.count.used++;
  }
  if (stack.filter((s) => s === schema).length >= RECURSION_DEPTH) {
    return { description: 'Recursive: its structure repeats here (not described further).' };
  }
  const inner = [...stack, schema];
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (use === 'input' && UNENFORCED.has(key)) notes.push(`"${key}" is not checked by mcp-edge: left out, so the API may refuse what the tool accepts`);
    if (KEPT.has(key)) out[key] = value;
    else if (SUBSCHEMA.has(key)) out[key] = typeof value === 'boolean' ? value : walk(value, use, notes, inner, opts);
    else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) out[key] = value.map((s) => walk(s, use, notes, inner, opts));
    else if (key === 'properties' && value && typeof value === 'object') {
      out.properties = {};
      for (const [name, prop] of Object.entries(value)) {
        if (hidden(prop, use)) continue;
        out.properties[name] = walk(prop, use, notes, inner, opts);
      }
    }
  }
  if (typeof out.description === 'string') out.description = trimText(out.description, MAX_DESCRIPTION);
  if (Array.isArray(out.required) && out.properties) {
    const hiddenNames = Object.keys(schema.properties ?? {}).filter((n) => hidden(schema.properties[n], use));
    out.required = out.required.filter((n) => !hiddenNames.includes(n));
    if (out.required.length === 0) delete out.required;
  }
  // OpenAPI 3.0: exclusiveMinimum/Maximum are booleans that qualify minimum/maximum.
  for (const [flag, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']]) {
    if (typeof out[flag] === 'boolean') {
      if (out[flag] && typeof out[bound] === 'number') {
        out[flag] = out[bound];
        delete out[bound];
      } else delete out[flag];
    }
  }
  // OpenAPI's int32 and int64 are whole numbers (int32 in its range), as validators read them,
  // even on a `number`.
  if (out.format === 'int32' || out.format === 'int64') {
    if (out.type === 'number') out.type = 'integer';
    else if (Array.isArray(out.type)) out.type = out.type.map((t) => (t === 'number' ? 'integer' : t));
    if (out.format === 'int32') {
      if (out.minimum === undefined && out.exclusiveMinimum === undefined) out.minimum = -2147483648;
      if (out.maximum === undefined && out.exclusiveMaximum === undefined) out.maximum = 2147483647;
    }
  }
  // A reply is checked for its structure, not the spelling of its strings: a format or pattern
  // a real reply bends would turn a good call into an error (clients check them too).
  if (use === 'output') {
    delete out.format;
    delete out.pattern;
  }
  if (typeof out.pattern === 'string' && !validPattern(out.pattern)) {
    notes.push(`pattern ${JSON.stringify(out.pattern)} is not an ECMA-262 expression in unicode mode: left out`);
    delete out.pattern;
  }
  const formatPattern = use === 'input' && typesOf(out).includes('string') && FORMAT_PATTERNS[out.format];
  if (formatPattern) {
    if (out.pattern === undefined) out.pattern = formatPattern;
    else out.allOf = [...(out.allOf ?? []), { pattern: formatPattern }];
  }
  // 3.0's `nullable: true` is 3.1's `null` type.
  if (schema.nullable === true) return nullable(out);
  return out;
}

/** Whether a property is left out for this use: read-only ones are never sent. */
function hidden(prop, use) {
  return !!prop && typeof prop === 'object' && (use === 'input' ? prop.readOnly === true : prop.writeOnly === true);
}

function nullable(out) {
  if (typeof out.type === 'string') {
    out.type = [out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  if (Array.isArray(out.type)) {
    if (!out.type.includes('null')) out.type = [...out.type, 'null'];
    return out;
  }
  return { anyOf: [out, { type: 'null' }] };
}

function validPattern(pattern) {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

/** The schema's types, as a list (`type` may be one or several; none means any). */
export function typesOf(schema) {
  if (!schema || typeof schema !== 'object') return [];
  if (Array.isArray(schema.type)) return schema.type;
  if (typeof schema.type === 'string') return [schema.type];
  if (schema.properties) return ['object'];
  return [];
}

/** Cuts text at a word boundary before `max` characters, marking the cut with an ellipsis. */
export function trimText(text, max) {
  const clean = String(text).trim();
  if (clean.length <= max) return clean;
  const cut = clean.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
