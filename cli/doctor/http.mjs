//! What every check shares: one fetch with a time bound, bodies read as JSON or as SSE with the
//! time each event arrived, URLs compared as canonical URIs, and secrets shown only as fingerprints.
import { createHash } from 'node:crypto';

/** fetch with a time bound; a network failure resolves to `{ error }` instead of throwing. */
export async function send(url, init = {}, timeoutMs = 15_000) {
  const started = performance.now();
  try {
    const res = await fetch(url, { redirect: 'manual', ...init, signal: AbortSignal.timeout(timeoutMs) });
    return { res, started };
  } catch (e) {
    const cause = e.cause?.code ? e.cause : e.cause?.errors?.[0];
    return { error: e.name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : cause?.code ? `${e.message}: ${cause.code}` : e.message };
  }
}

/** The most of a body the doctor reads: metadata, errors and replies are far smaller. */
export const MAX_BODY = 1 << 20;

/** Reads a body as text, at most MAX_BODY bytes of it, never throwing. */
export async function text(res) {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks = [];
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
      if (size >= MAX_BODY) {
        await reader.cancel().catch(() => {});
        break;
      }
    }
  } catch {}
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, MAX_BODY));
}

export function json(body) {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

export const isHtml = (res, body) => /text\/html/i.test(res.headers.get('content-type') ?? '') || /^\s*<(!doctype|html)/i.test(body);

/**
 * Reads a JSON-RPC reply: one JSON body, or an SSE stream whose events are timed (ms since the
 * request left, as a proxy that buffers may hold the headers too) so a buffering proxy shows as
 * every event arriving at the end.
 */
export async function readReply(res, started) {
  const headersAt = started ?? performance.now();
  const type = res.headers.get('content-type') ?? '';
  if (!/text\/event-stream/i.test(type)) {
    const body = await text(res);
    const parsed = json(body);
    return { kind: 'json', body, messages: parsed === undefined ? [] : [parsed].flat() };
  }
  const events = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      if (buffer.length > MAX_BODY) throw new Error(`an SSE event over ${MAX_BODY} bytes`);
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
        const isComment = block.split('\n').every((l) => l.startsWith(':') || l === '');
        if (!isComment) events.push({ at: performance.now() - headersAt, data });
      }
    }
  } catch (e) {
    return { kind: 'sse', events, messages: parseEvents(events), endMs: performance.now() - headersAt, error: e.message };
  }
  return { kind: 'sse', events, messages: parseEvents(events), endMs: performance.now() - headersAt };
}

const parseEvents = (events) => events.map((e) => json(e.data)).filter((m) => m && typeof m === 'object');

/** The JSON-RPC response to request `id` among `messages`. */
export const responseTo = (messages, id) => messages.find((m) => m.id === id && ('result' in m || 'error' in m));

/**
 * A URL as a canonical resource URI (RFC 8707, MCP "Canonical Server URI"): lower-case scheme
 * and host, no default port, no fragment, no trailing slash.
 */
export function canonical(url) {
  try {
    const u = new URL(url);
    u.hash = '';
    let s = u.href;
    if (s.endsWith('/') && !u.search) s = s.slice(0, -1);
    return s;
  } catch {
    return String(url);
  }
}

/** `resource` covers `url` the way the SDK clients accept it: same origin, a path prefix. */
export function covers(resource, url) {
  try {
    const r = new URL(canonical(resource));
    const u = new URL(canonical(url));
    if (r.origin !== u.origin) return false;
    const rp = r.pathname.endsWith('/') ? r.pathname : `${r.pathname}/`;
    return `${u.pathname}/`.startsWith(rp);
  } catch {
    return false;
  }
}

/** A secret shown as `sha256:` and 8 hex digits: enough to tell two apart, nothing to use. */
export const fingerprint = (secret) => `sha256:${createHash('sha256').update(String(secret)).digest('hex').slice(0, 8)}`;

/**
 * `WWW-Authenticate` as challenges: `[{ scheme, params }]` (RFC 9110 §11.6.1), quoted strings
 * unescaped, parameter names in lower case; a token68 is kept as `params.token68`. Linear in
 * the header's length, and never throws: the header comes from the server under diagnosis.
 */
export function parseChallenges(header) {
  const s = String(header ?? '');
  const out = [];
  let i = 0;
  const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]+/y;
  const TOKEN68 = /[A-Za-z0-9\-._~+/]+=*/y;
  const match = (re) => {
    re.lastIndex = i;
    const m = re.exec(s);
    if (!m) return undefined;
    i = re.lastIndex;
    return m[0];
  };
  const spaces = () => {
    while (s[i] === ' ' || s[i] === '\t') i++;
  };
  const separators = () => {
    while (s[i] === ' ' || s[i] === '\t' || s[i] === ',') i++;
  };
  /** At `name =` (a parameter), not at a scheme or the end. */
  const atParam = () => {
    const save = i;
    const name = match(TOKEN);
    spaces();
    const yes = Boolean(name) && s[i] === '=';
    i = save;
    return yes;
  };
  while (i < s.length) {
    separators();
    const scheme = match(TOKEN);
    if (!scheme) {
      i++;
      continue;
    }
    const challenge = { scheme, params: {} };
    out.push(challenge);
    spaces();
    // token68: its own end, then the end or a comma.
    const save = i;
    const t68 = match(TOKEN68);
    if (t68) {
      spaces();
      if (i >= s.length || s[i] === ',') {
        challenge.params.token68 = t68;
        continue;
      }
    }
    i = save;
    while (i < s.length && atParam()) {
      const name = match(TOKEN).toLowerCase();
      spaces();
      i++; // '='
      spaces();
      let value = '';
      if (s[i] === '"') {
        i++;
        while (i < s.length && s[i] !== '"') {
          if (s[i] === '\\') i++;
          if (i < s.length) value += s[i++];
        }
        i++;
      } else {
        value = match(TOKEN) ?? '';
      }
      challenge.params[name] ??= value;
      spaces();
      if (s[i] !== ',') break;
      separators();
    }
  }
  return out;
}
