// The few runtime calls the Worker makes through JavaScript of its own: each does in one
// crossing of the wasm boundary what would otherwise take several, or reads a value the Rust
// side cannot read without serde-wasm-bindgen. tests/e2e/glue.test.mjs tests them under Node.

/**
 * `METHOD\nURL\nname\nvalue…`: header values never hold a line break. `forEach` rather than
 * `for…of`, which builds an entry array per header (measured: a third fewer instructions).
 */
export function request_head(request) {
  let head = request.method + '\n' + request.url;
  request.headers.forEach((value, name) => {
    head += '\n' + name + '\n' + value;
  });
  return head;
}

/**
 * `content-type\ncontent-length\nheader-bytes` of an upstream reply, the first two empty when
 * absent; the last counts every header's name and value (src/edge/upstream.rs refuses a reply
 * whose headers are too large).
 */
export function reply_head(response) {
  const headers = response.headers;
  let bytes = 0;
  headers.forEach((value, name) => {
    bytes += name.length + value.length;
  });
  return (headers.get('content-type') ?? '') + '\n' + (headers.get('content-length') ?? '') + '\n' + bytes;
}

/**
 * An upstream request's `RequestInit`, made in one crossing of the wasm boundary rather than a
 * `Headers`, an `append` per header, a `RequestInit` and a setter per field (6 crossings and one
 * per header, on every call): the method, `lines` as `name\nvalue\n…` (no name or value holds a
 * line break: src/edge/upstream.rs refuses those first), redirects left to the caller, the
 * call's abort signal, and the body when there is one. The headers go as a plain list, which the
 * runtime copies into a set of its own.
 */
export function request_init(method, lines, body, signal) {
  const headers = [];
  if (lines) {
    const parts = lines.split('\n');
    for (let i = 0; i + 1 < parts.length; i += 2) headers.push([parts[i], parts[i + 1]]);
  }
  const init = { method, headers, redirect: 'manual', signal };
  if (body !== undefined) init.body = body;
  return init;
}

/**
 * The headers of an answer: its content type (none when empty), for a stream the two that keep
 * proxies from buffering it, and its session's id (none when empty). One crossing rather than a
 * `Headers` and a `set` for each, on every call (issue 45).
 */
export function answer_headers(contentType, stream, sessionId) {
  const headers = new Headers();
  if (contentType) headers.set('Content-Type', contentType);
  if (stream) {
    headers.set('Cache-Control', 'no-cache');
    headers.set('X-Accel-Buffering', 'no');
  }
  if (sessionId) headers.set('Mcp-Session-Id', sessionId);
  return headers;
}

/**
 * A session's state, a queued call or a call's record as stored or sent: JSON text. Earlier
 * builds stored and sent the first two as structured objects (serde-wasm-bindgen's, with a `Map`
 * for each JSON object); those read as the same JSON.
 */
export function json_text(value) {
  if (value === undefined || value === null || typeof value === 'string') return value ?? undefined;
  return JSON.stringify(value, (key, v) => (v instanceof Map ? Object.fromEntries(v) : v));
}

/** Sends a queued call as JSON text. */
export function queue_send(queue, text) {
  return queue.send(text);
}

/** Whether the Rate Limiting binding lets one more request with `key` through. */
export function rate_limit(limiter, key) {
  return limiter.limit({ key }).then((outcome) => outcome.success);
}

/**
 * PBKDF2-SHA256 of `password` with `salt` (bytes), `iterations` rounds: 32 bytes, through Web
 * Crypto, the only slow KDF the runtime offers. Sign-in mode (c) checks passwords with it.
 */
export async function pbkdf2(password, salt, iterations) {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(password), 'PBKDF2', false, ['deriveBits']);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations }, key, 256));
}

/**
 * A promise that resolves once `signal` has fired: with the `enable_request_signal` flag, the
 * request's client went away (src/edge/writer.rs).
 */
export function aborted(signal) {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

// ---- the pinned tool definitions of a server's registry (src/edge/object/pins.rs) ----
// Keys: `pin:<upstream>\n<tool>` and `held:…` ({fingerprint, definition, atMs} as JSON text),
// `rejected:…` (a fingerprint), `seen:<upstream>`. Rust decides (src/pins.rs); these read and
// write in one crossing each.

/** One upstream's pins as JSON text: {seen, pins: {tool: {fingerprint, definition}}, held: {tool: fingerprint}, rejected: {tool: fingerprint}}. */
export async function pins_read(storage, source) {
  const out = { seen: (await storage.get('seen:' + source)) !== undefined, pins: {}, held: {}, rejected: {} };
  for (const kind of ['pin', 'held', 'rejected']) {
    const prefix = kind + ':' + source + '\n';
    for (const [key, value] of await storage.list({ prefix })) {
      const name = key.slice(prefix.length);
      if (kind === 'pin') out.pins[name] = JSON.parse(value);
      else out[kind][name] = kind === 'held' ? JSON.parse(value).fingerprint : value;
    }
  }
  return JSON.stringify(out);
}

/** Stores every key → text of the JSON object `puts`, 128 (the runtime's most) at a time. */
export async function store_all(storage, puts) {
  const entries = Object.entries(JSON.parse(puts));
  for (let i = 0; i < entries.length; i += 128) await storage.put(Object.fromEntries(entries.slice(i, i + 128)));
}

/** The fingerprinted fields (src/pins.rs `FIELDS`) two definitions disagree on. */
export function pins_changed(old, now) {
  return ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'].filter((f) => JSON.stringify(old?.[f]) !== JSON.stringify(now?.[f]));
}

/**
 * Every held change of the server `about` names ({server, mode, prefixes: {upstream: prefix}}),
 * as the admin API lists it: [{server, mode, upstream, tool, name (with the prefix), fingerprint,
 * atMs, fields (those changed), old (the pinned definition, or null), new}], as JSON text.
 */
export async function pins_held(storage, about) {
  const { server, mode, prefixes } = JSON.parse(about);
  const out = [];
  for (const [key, value] of await storage.list({ prefix: 'held:' })) {
    const rest = key.slice(5);
    const cut = rest.indexOf('\n');
    const [upstream, tool] = [rest.slice(0, cut), rest.slice(cut + 1)];
    const held = JSON.parse(value);
    const pin = await storage.get('pin:' + rest);
    const old = pin === undefined ? null : JSON.parse(pin).definition;
    out.push({ server, mode, upstream, tool, name: (prefixes[upstream] ?? '') + tool, fingerprint: held.fingerprint, atMs: held.atMs, fields: pins_changed(old, held.definition), old, new: held.definition });
  }
  return JSON.stringify(out);
}

/**
 * An admin's decision on the change held under `key` (`<upstream>\n<tool>`), only if it is the
 * change whose `fingerprint` the admin saw: approved, it becomes the pin; rejected, its
 * fingerprint is remembered. `{old, new, fields}` as JSON text, or undefined when no such change is held.
 */
export async function pins_decide(storage, key, fingerprint, approve) {
  const text = await storage.get('held:' + key);
  const held = text === undefined ? undefined : JSON.parse(text);
  if (!held || held.fingerprint !== fingerprint) return undefined;
  const pin = await storage.get('pin:' + key);
  await storage.delete('held:' + key);
  if (approve) {
    await storage.put('pin:' + key, text);
    await storage.delete('rejected:' + key);
  } else await storage.put('rejected:' + key, held.fingerprint);
  const old = pin === undefined ? null : JSON.parse(pin).definition;
  return JSON.stringify({ old, new: held.definition, fields: pins_changed(old, held.definition).join(', ') });
}

// ---- the audit log's object (src/edge/audit.rs): events under `a:<atMs>:<nonce>` ----

/** Keeps one event; past `kept + batch` events, the oldest `batch` go. */
export async function audit_append(storage, key, text, kept, batch) {
  await storage.put(key, text);
  let count = ((await storage.get('count')) ?? 0) + 1;
  if (count > kept + batch) {
    const old = [...(await storage.list({ prefix: 'a:', limit: batch })).keys()];
    await storage.delete(old);
    count -= old.length;
  }
  await storage.put('count', count);
}

/** A page of events, newest first, before the key `before` (empty: the newest): {entries, next}. */
export async function audit_page(storage, limit, before) {
  const options = { prefix: 'a:', reverse: true, limit: limit + 1 };
  if (before) options.end = before;
  const listed = [...(await storage.list(options))];
  const page = listed.slice(0, limit);
  const next = listed.length > limit ? JSON.stringify(page[page.length - 1][0]) : 'null';
  return '{"entries":[' + page.map(([, v]) => v).join(',') + '],"next":' + next + '}';
}
