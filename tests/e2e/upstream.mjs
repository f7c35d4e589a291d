//! A real HTTP upstream on 127.0.0.1 for the end-to-end tests: the demo endpoints plus ones that
//! fail, hang, flap, ask to retry later, redirect, send 50 MB or binary, lie about JSON, wait
//! for the test to release them, or misbehave on purpose (drip, stall, never end, send invalid
//! UTF-8 or 100 KB of headers, answer after the client cancelled: /hostile/<kind>/<key>), or echo
//! the secret they were sent in any spelling (/secret/<spelling>).
import { createServer } from 'node:http';
import { demoHandler } from '../../examples/default/upstream.mjs';

const BIG_BYTES = 50 * 1024 * 1024;
// A 1×1 PNG, the start of a WAV file, and a tiny PDF: real magic numbers, small bodies.
const BINARY = {
  '/image': ['image/png', Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')],
  '/audio': ['audio/wav', Buffer.from('RIFF$\0\0\0WAVEfmt ', 'latin1')],
  '/pdf': ['application/pdf', Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')],
};

/** The spellings a careless upstream may echo a secret in: as written, JSON-escaped (and a JSON
 *  text inside a JSON string), percent-encoded, HTML references, base64 (alone, and inside a
 *  longer value). */
export const SPELLINGS = {
  raw: (s) => s,
  json: (s) => JSON.stringify(s).slice(1, -1),
  'json-slash': (s) => JSON.stringify(s).slice(1, -1).replaceAll('/', '\\/'),
  'json-u': (s) => [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`).join(''),
  'json-in-json': (s) => JSON.stringify(JSON.stringify(s)).slice(3, -3),
  percent: (s) => encodeURIComponent(s),
  'percent-lower': (s) => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''),
  form: (s) => new URLSearchParams({ s }).toString().slice(2),
  'html-dec': (s) => [...s].map((c) => `&#${c.codePointAt(0)};`).join(''),
  'html-hex': (s) => [...s].map((c) => `&#x00${c.codePointAt(0).toString(16)};`).join(''),
  'html-named': (s) => s.replace(/[&<>"/+=:]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '/': '&sol;', '+': '&plus;', '=': '&equals;', ':': '&colon;' })[c]),
  base64: (s) => Buffer.from(s).toString('base64'),
  base64url: (s) => Buffer.from(s).toString('base64url'),
  'base64-inside': (s) => Buffer.from(`{"key":"${s}"}`).toString('base64'),
};

/** /secret/<spelling>: the secret sent in X-Secret, spelled, between `pad` and `after` dots, as
 *  `as` says: `text`, an `error` (500), an NDJSON `stream` (a progress line and a log line with
 *  it, then a result with it), a `garbage` line that is not JSON, or a request to `ask` the
 *  client with it (the follow-up's result says what came back). */
function secretEcho(req, res, url) {
  const spelled = SPELLINGS[url.pathname.slice('/secret/'.length)](req.headers['x-secret'] ?? '');
  const dots = (n) => '.'.repeat(Number(n ?? 0));
  const text = `${dots(url.searchParams.get('pad'))}${spelled}${dots(url.searchParams.get('after'))}`;
  const as = url.searchParams.get('as') ?? 'text';
  const line = (value) => `${JSON.stringify(value)}\n`;
  if (as === 'text' || as === 'error') {
    res.writeHead(as === 'error' ? 500 : 200, { 'content-type': 'text/plain' });
    res.end(text);
  } else if (as === 'stream') {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(line({ progress: 1, total: 2, message: `progress ${text}` }));
    res.write(line({ log: { level: 'info', data: { seen: text }, logger: 'echo' } }));
    res.end(line({ result: { content: [{ type: 'text', text: `result ${text}` }] } }));
  } else if (as === 'garbage') {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end(`${text}\n`);
  } else if (as === 'ask') {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      const answered = JSON.parse(body || '{}').input;
      if (answered) return res.end(line({ result: { content: [{ type: 'text', text: `answered ${JSON.stringify(answered.result)}` }] } }));
      const params = { message: `Confirm ${text}`, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } };
      res.end(line({ input: { method: 'elicitation/create', params }, state: { asked: true } }));
    });
  }
}

export async function startTestUpstream() {
  const held = new Map(); // key → [res]
  const seen = []; // requests as the upstream saw them
  const attempts = new Map(); // key → requests so far (/flap, /retry-after)
  const big = new Map(); // key → { written, closed } (/big)
  const hanging = new Set(); // keys of /hang requests still open
  const aborted = new Set(); // keys of /hang requests the worker gave up on
  const jobs = new Map(); // key → the callback URL a /jobs request carried
  const hostile = new Map(); // key → { kind, closed, done } (/hostile)
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://upstream');
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    if (url.pathname === '/fail') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('upstream exploded');
    } else if (url.pathname === '/slow') {
      // Never answers; the worker's timeout must end the call.
      req.on('close', () => res.destroy());
    } else if (url.pathname === '/ask') {
      // Asks the client for a name, then greets it: state comes back with the answer.
      let text = '';
      req.on('data', (d) => (text += d));
      req.on('end', () => {
        const body = JSON.parse(text || '{}');
        res.writeHead(200, { 'content-type': 'application/json' });
        if (!body.input) {
          const params = { message: `Who is asking about ${body.topic}?`, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } };
          res.end(JSON.stringify({ input: { method: 'elicitation/create', params }, state: { topic: body.topic } }));
        } else {
          const { state, result } = body.input;
          res.end(JSON.stringify({ content: [{ type: 'text', text: `Hello ${result.content?.name ?? 'nobody'} (${result.action}), about ${state.topic}; arguments: ${JSON.stringify(body.arguments)}` }] }));
        }
      });
    } else if (url.pathname === '/whoami') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ authorization: req.headers.authorization ?? null }));
    } else if (url.pathname === '/bad-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"oops": ');
    } else if (url.pathname.startsWith('/inspect/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: url.pathname, query: url.search }));
    } else if (url.pathname.startsWith('/hold/')) {
      const key = decodeURIComponent(url.pathname.slice('/hold/'.length));
      const release = (text) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(text);
      };
      held.set(key, [...(held.get(key) ?? []), release]);
    } else if (url.pathname.startsWith('/stream-hold/')) {
      // The line protocol: a progress line now, the result when the test releases it.
      const key = decodeURIComponent(url.pathname.slice('/stream-hold/'.length));
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(JSON.stringify({ progress: 1, total: 2, message: 'started' }) + '\n');
      res.write(JSON.stringify({ log: { level: 'info', data: 'working', logger: 'upstream' } }) + '\n');
      const release = (text) => {
        res.end(JSON.stringify({ result: { content: [{ type: 'text', text }] } }) + '\n');
      };
      held.set(key, [...(held.get(key) ?? []), release]);
    } else if (url.pathname.startsWith('/mirror/')) {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const headers = Object.fromEntries(['content-type', 'x-name', 'x-trace', 'cookie'].filter((h) => h in req.headers).map((h) => [h, req.headers[h]]));
        res.end(JSON.stringify({ method: req.method, path: url.pathname, query: url.search, headers, body }));
      });
    } else if (url.pathname === '/json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(url.searchParams.get('body') ?? '{}');
    } else if (url.pathname === '/image' || url.pathname === '/audio' || url.pathname === '/pdf') {
      const [type, bytes] = BINARY[url.pathname];
      res.writeHead(200, { 'content-type': type, 'content-length': bytes.length });
      res.end(bytes);
    } else if (url.pathname.startsWith('/big/')) {
      // 50 MB of text, written as fast as the reader takes it.
      const stats = { written: 0, closed: false };
      big.set(url.pathname.slice('/big/'.length), stats);
      const chunk = Buffer.alloc(64 * 1024, 'a');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.on('close', () => (stats.closed = stats.written < BIG_BYTES));
      const pump = () => {
        while (stats.written < BIG_BYTES && !res.destroyed) {
          stats.written += chunk.length;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end();
      };
      pump();
    } else if (url.pathname.startsWith('/flap/')) {
      // 503 for the first `fails` requests of a key, then 200.
      const key = url.pathname.slice('/flap/'.length);
      const n = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, n);
      if (n <= Number(url.searchParams.get('fails') ?? 1)) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end(`busy (attempt ${n})`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ attempts: n }));
      }
    } else if (url.pathname.startsWith('/retry-after/')) {
      const key = url.pathname.slice('/retry-after/'.length);
      const n = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, n);
      if (n === 1) {
        res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': url.searchParams.get('after') ?? '1' });
        res.end('slow down');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ attempts: n }));
      }
    } else if (url.pathname === '/redirect') {
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
      res.end();
    } else if (url.pathname === '/leak') {
      // A careless upstream that quotes the credentials it was sent.
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`bad key ${req.headers['x-key']} (query ${url.searchParams.get('key')})`);
    } else if (url.pathname.startsWith('/secret/')) {
      secretEcho(req, res, url);
    } else if (url.pathname === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(api.jwks));
    } else if (url.pathname.startsWith('/jobs/')) {
      // A long job: accepted now, its result POSTed later to the callback URL.
      jobs.set(url.pathname.slice('/jobs/'.length), req.headers['mcp-edge-callback']);
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end('{"accepted":true}');
    } else if (url.pathname.startsWith('/hostile/')) {
      // Upstreams that misbehave on purpose (issue 25), each named by its kind; `hostile` records
      // whether mcp-edge let go of the connection before the upstream was done.
      const [kind, key = kind] = url.pathname.slice('/hostile/'.length).split('/');
      const record = { kind, closed: false, done: false };
      hostile.set(key, record);
      res.on('close', () => (record.closed = !record.done));
      const finish = (text) => {
        record.done = true;
        res.end(text);
      };
      if (kind === 'drip') {
        // One byte a second, forever.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), 1000);
        res.on('close', () => clearInterval(timer));
      } else if (kind === 'stall') {
        // Headers, then nothing.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
      } else if (kind === 'endless') {
        // A body that keeps coming, small and fast, and never ends.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('still going\n'), 10);
        res.on('close', () => clearInterval(timer));
      } else if (kind === 'bad-utf8') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        finish(Buffer.from([0x6f, 0x6b, 0x20, 0xff, 0xfe, 0x20, 0xc3, 0x28]));
      } else if (kind === 'big-headers') {
        // 100 KB of headers ahead of a small, valid body.
        const headers = { 'content-type': 'application/json' };
        for (let i = 0; i < 100; i++) headers[`x-filler-${i}`] = 'f'.repeat(1000);
        res.writeHead(200, headers);
        finish('{"fine":true}');
      } else if (kind === 'late') {
        // Answers only after the test says so: after the client cancelled.
        held.set(key, [(text) => {
          if (res.destroyed) return;
          res.writeHead(200, { 'content-type': 'text/plain' });
          finish(text);
        }]);
      } else {
        res.writeHead(404);
        finish();
      }
    } else if (url.pathname.startsWith('/hang/')) {
      const key = url.pathname.slice('/hang/'.length);
      hanging.add(key);
      res.on('close', () => {
        hanging.delete(key);
        aborted.add(key);
      });
    } else {
      demoHandler(req, res);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const api = {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    attempts,
    big,
    hanging,
    aborted,
    jobs,
    hostile,
    /** Resolves once a request for `key` is being held. */
    async waitForHold(key) {
      while (!held.get(key)?.length) await new Promise((r) => setTimeout(r, 10));
    },
    release(key, text) {
      for (const release of held.get(key) ?? []) release(text);
      held.delete(key);
    },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
    /** The key set /jwks serves; tests put their public keys here. */
    jwks: { keys: [] },
  };
  return api;
}
