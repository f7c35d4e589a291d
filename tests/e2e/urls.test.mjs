// One URL parser for every security decision (issue 38): every hostile spelling of an attacker's
// listener on this machine (tests/hostile-urls.json: IDNA-mapped digits and dots, soft hyphens,
// backslashes, tabs, numeric IPv4 forms, IPv6 forms) is driven through workerd's real fetch, as
// a tool URL from a secret, as a Client ID Metadata Document URL at /authorize (no sign-in
// needed), and as a redirect from a real upstream. No connection may reach the listener unless
// its host is listed, and the client gets a clear refusal. Then: redirects with a backslash
// never carry credentials to another host, and callback URLs are on the request's own origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, request } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, openSession, post, root, startMiniflare } from './harness.mjs';

const CORPUS = JSON.parse(readFileSync(join(root, 'tests', 'hostile-urls.json'), 'utf8')).spellings;

/** The attacker: a TCP listener on this machine's loopback (IPv4 and, where there is one, IPv6)
 *  that records every connection, and answers an HTTP request with `{}`. */
async function startListener() {
  const connections = [];
  const sockets = new Set();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const seen = { data: '' };
    connections.push(seen);
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      seen.data += chunk.toString('latin1');
      // A TLS ClientHello (an https fetch) is recorded and cut off.
      if (chunk[0] === 0x16) return socket.destroy();
      if (seen.data.includes('\r\n\r\n')) socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', () => server.listen(0, '127.0.0.1', resolve));
    server.listen({ port: 0, host: '::', ipv6Only: false }, resolve);
  }).catch(() => {});
  const close = () => {
    for (const socket of sockets) socket.destroy();
    return new Promise((r) => server.close(r));
  };
  return { port: server.address().port, connections, close };
}

/** A real upstream on 127.0.0.1: `/redirect?to=X` answers 302 to X as written; `/job` takes a
 *  callback call (202) and keeps the callback URL it was given; `/ok` answers `{"ok":true}`. */
async function startUpstream() {
  const seen = [];
  const jobs = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://upstream');
    seen.push({ url: req.url, headers: req.headers });
    if (url.pathname === '/redirect') {
      try {
        res.writeHead(302, { location: url.searchParams.get('to') }).end();
      } catch {
        res.writeHead(400).end('that Location cannot be sent');
      }
    } else if (url.pathname === '/job') {
      jobs.push(req.headers['mcp-edge-callback']);
      res.writeHead(202).end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const close = () => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  };
  return { url: `http://127.0.0.1:${server.address().port}`, port: server.address().port, seen, jobs, close };
}

/** Each spelling aimed at the listener, with a path of its own. */
const targets = (port) => CORPUS.map((s, i) => ({ ...s, index: i, url: `${s.url.replace('PORT', port)}t${i}` }));

/** A worker whose tool `t<i>` fetches the URL of the secret `TARGET_<i>`, which has an
 *  authorization server (for metadata documents), and whose `private` hosts are listed. */
async function startWorker({ listener, upstream, private: hosts }) {
  const spellings = targets(listener.port);
  const config = {
    admission: { enabled: false },
    oauth: { signIn: { users: [{ username: 'alice', passwordSecret: 'ALICE_PASSWORD' }] }, registration: 'open', privateHosts: hosts },
    servers: [
      {
        route: '/mcp',
        name: 'urls',
        version: '1',
        privateUpstreams: hosts,
        tools: [
          ...spellings.map((s) => ({ name: `t${s.index}`, description: s.what, http: { url: `{+env.TARGET_${s.index}}`, timeoutMs: 3000 } })),
          {
            name: 'follow',
            description: 'Follows the redirect the upstream is told to send, with a credential.',
            inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
            http: { url: '{+env.UPSTREAM_URL}/redirect{?to}', headers: { Authorization: 'Bearer {env.API_KEY}' }, maxRedirects: 2, timeoutMs: 3000 },
          },
          { name: 'job', description: 'A callback call.', execution: 'callback', pendingTimeoutMs: 1000, http: { url: '{+env.UPSTREAM_URL}/job' } },
        ],
      },
      { route: '/secure/mcp', name: 'secure', version: '1', auth: { oauth: true } },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-urls-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  const bindings = Object.fromEntries(spellings.map((s) => [`TARGET_${s.index}`, s.url]));
  const worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, bindings: { ...bindings, ALICE_PASSWORD: 'alice-pw-3f9c1e' } });
  const mcp = new URL('/mcp', worker.url);
  const session = await openSession(mcp);
  let id = 1;
  return {
    ...worker,
    spellings,
    async call(name, args = {}) {
      const res = await post(mcp, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args } }, { 'mcp-session-id': session });
      const body = await res.text();
      assert.equal(res.status, 200, body);
      const reply = JSON.parse(body);
      // A URL that is not http(s) at all once its secret is in is refused before the guard,
      // as a JSON-RPC error; anything else is a tool result.
      if (reply.error) return { isError: true, content: [{ type: 'text', text: reply.error.message }] };
      return reply.result;
    },
    async close() {
      await worker.mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `GET /authorize` naming `clientId`, as any browser may without signing in. */
async function authorize(worker, clientId) {
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const params = { response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:9/callback', code_challenge: challenge, code_challenge_method: 'S256', state: 's', resource: new URL('/secure/mcp', worker.url).href };
  const res = await fetch(new URL(`/authorize?${new URLSearchParams(params)}`, worker.url), { redirect: 'manual' });
  const body = await res.text();
  return { status: res.status, location: res.headers.get('location'), error: body.match(/id="error"[^>]*>([^<]*)</)?.[1] ?? '' };
}

/** Waits for stray connections (a refused fetch makes none; an allowed one is quick). */
const settle = () => new Promise((r) => setTimeout(r, 300));

const text = (result) => result.content?.[0]?.text ?? '';
const REFUSAL = /refused|is a loopback|is an unspecified|is a private|not http|not an http|has no host|not a valid URL/;

let listener;
let upstream;
before(async () => {
  listener = await startListener();
  upstream = await startUpstream();
});
after(async () => {
  await listener?.close();
  await upstream?.close();
});

test('tool URLs from a secret: with nothing listed, no spelling of a loopback listener is fetched', async () => {
  const worker = await startWorker({ listener, upstream, private: [] });
  try {
    for (const s of worker.spellings) {
      const result = await worker.call(`t${s.index}`);
      assert.equal(result.isError, true, `${s.what}: ${JSON.stringify(s.url)} → ${JSON.stringify(result)}`);
      assert.match(text(result), REFUSAL, s.what);
    }
    await settle();
    assert.deepEqual(listener.connections, [], 'a connection reached the listener');
  } finally {
    await worker.close();
  }
});

test('tool URLs from a secret: with 127.0.0.1 listed, only its ASCII spellings reach it, as 127.0.0.1', async () => {
  const worker = await startWorker({ listener, upstream, private: ['127.0.0.1'] });
  try {
    for (const s of worker.spellings) {
      // An allowed fetch connects before its result comes back; a refused one never does.
      const before = listener.connections.length;
      const result = await worker.call(`t${s.index}`);
      const reached = listener.connections.slice(before);
      if (s.same) {
        // The same host, so listed: fetched at the URL as the parser serialized it.
        assert.notEqual(result.isError, true, `${s.what}: ${JSON.stringify(result)}`);
        assert.equal(reached.length, 1, s.what);
        assert.match(reached[0].data, new RegExp(`^POST /t${s.index} HTTP/1.1\r\n`), s.what);
        assert.match(reached[0].data, new RegExp(`\r\nhost: 127\\.0\\.0\\.1:${listener.port}\r\n`, 'i'), s.what);
      } else {
        assert.equal(result.isError, true, `${s.what}: ${JSON.stringify(s.url)} → ${JSON.stringify(result)}`);
        assert.match(text(result), REFUSAL, s.what);
        assert.deepEqual(reached, [], `${s.what}: a connection reached the listener`);
      }
    }
    await settle();
    assert.equal(listener.connections.length, worker.spellings.filter((s) => s.same).length, 'a late connection reached the listener');
  } finally {
    await worker.close();
    listener.connections.length = 0;
  }
});

test('Client ID Metadata Document URLs at /authorize: no hostile spelling is fetched, and the page says why', async () => {
  for (const hosts of [[], ['127.0.0.1']]) {
    const worker = await startWorker({ listener, upstream, private: hosts });
    try {
      for (const s of worker.spellings) {
        // https, which a metadata document needs (http only on a listed host).
        for (const clientId of [s.url.replace(/^(http)(:)/i, '$1s$2') + '.json', s.url + '.json']) {
          const before = listener.connections.length;
          // A fetch that connects does so before the page answers: no wait is needed here.
          const page = await authorize(worker, clientId);
          assert.equal(listener.connections.length, before, `${s.what}: ${JSON.stringify(clientId)} reached the listener: ${page.error}`);
          assert.equal(page.status, 400, `${s.what}: ${clientId}`);
          assert.equal(page.location, null, s.what);
          assert.match(page.error, /not a usable metadata document URL|could not be fetched|not registered/, `${s.what}: ${page.error}`);
        }
      }
      await settle();
      assert.deepEqual(listener.connections, [], `a connection reached the listener (privateHosts ${JSON.stringify(hosts)})`);
      if (hosts.length) {
        // The listed host, written as the parser serializes it, is fetched: the listener
        // would see any of the spellings above.
        const plain = await authorize(worker, `http://127.0.0.1:${listener.port}/client.json`);
        assert.equal(plain.status, 400);
        assert.match(plain.error, /not JSON|client_id/);
        assert.equal(listener.connections.length, 1);
      }
    } finally {
      await worker.close();
      listener.connections.length = 0;
    }
  }
});

test('redirects: a backslash, IDNA or another spelling never takes the credential to another host', async () => {
  // 127.0.0.1 is listed for the upstream, and localhost too: the redirect rules alone stand
  // between the credential and the listener.
  const worker = await startWorker({ listener, upstream, private: ['127.0.0.1', 'localhost'] });
  try {
    const lp = listener.port;
    const up = upstream.port;
    for (const [location, why] of [
      // Read with the authority ending at `/`, `?` or `#`, these are 127.0.0.1:<upstream>, the
      // same origin; to WHATWG (workerd) they are localhost:<listener>.
      [`http://localhost:${lp}\\@127.0.0.1:${up}/`, /backslash/],
      [`http://evil.example\\@127.0.0.1:${up}/`, /backslash/],
      [`http:\\\\localhost:${lp}/`, /backslash/],
      [`/\\localhost:${lp}/`, /backslash/],
      [`http://localhost:${lp}#@127.0.0.1:${up}/`, /not allowed/],
      [`http://127.0.0.1:${up}@localhost:${lp}/`, /not allowed/],
      [`http://127.0.0.1\t:${lp}/`, /control character/],
      ...targets(lp).filter((s) => /^[\x20-\xff]*$/.test(s.url)).map((s) => [s.url, /refused|not allowed|not an http/]),
    ]) {
      const result = await worker.call('follow', { to: location });
      assert.equal(result.isError, true, `${JSON.stringify(location)} → ${JSON.stringify(result)}`);
      assert.match(text(result), why, JSON.stringify(location));
    }
    await settle();
    assert.deepEqual(listener.connections, [], 'a redirect reached the listener');
    // A redirect on the same origin as parsed is followed, with the credential.
    const home = await worker.call('follow', { to: `http://0x7f.1:${up}/ok` });
    assert.deepEqual(home.structuredContent, { ok: true });
    assert.equal(upstream.seen.at(-1).url, '/ok');
    assert.equal(upstream.seen.at(-1).headers.authorization, `Bearer ${API_KEY}`);
  } finally {
    await worker.close();
  }
});

/** An MCP POST with a `Host` of our choosing (fetch will not send one). */
function postWithHost(url, host, body, headers = {}) {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', headers: { host, 'content-type': 'application/json', accept: 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    // A Host the runtime will not read ends the connection: no answer at all.
    req.on('error', (e) => resolve({ status: 0, headers: {}, text: e.message }));
    req.end(JSON.stringify(body));
  });
}

test('callback URLs are on the request\'s own origin as parsed; a Host the check refuses gets nothing', async () => {
  const worker = await startWorker({ listener, upstream, private: ['127.0.0.1'] });
  try {
    const mcp = new URL('/mcp', worker.url);
    const port = worker.url.port;
    const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'urls', version: '1' } } };
    // A loopback Host in capitals: the runtime's URL, and so the callback URL, spell it as the
    // URL parser serializes it.
    const host = `LOCALHOST:${port}`;
    const opened = await postWithHost(mcp, host, init);
    assert.equal(opened.status, 200, opened.text);
    const sid = opened.headers['mcp-session-id'];
    await postWithHost(mcp, host, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid });
    const jobs = upstream.jobs.length;
    await postWithHost(mcp, host, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'job', arguments: {} } }, { 'mcp-session-id': sid });
    assert.equal(upstream.jobs.length, jobs + 1);
    assert.match(upstream.jobs.at(-1), new RegExp(`^http://localhost:${port}/callbacks/[^/?#\\s]+$`));
    // A Host the DNS-rebinding check refuses, or one a URL parser would read otherwise, is
    // answered before any call is made.
    for (const foreign of [`evil.example:${port}`, `127.0.0.1:${port}\\@evil.example`, `evil.example\\@127.0.0.1:${port}`]) {
      const refused = await postWithHost(mcp, foreign, init);
      assert.ok([0, 400, 403, 500].includes(refused.status), `${foreign}: HTTP ${refused.status}`);
      assert.equal(refused.headers['mcp-session-id'], undefined, foreign);
    }
    assert.equal(upstream.jobs.length, jobs + 1);
  } finally {
    await worker.close();
  }
});

test('redirect URIs: a host parsers disagree on, or 127.<name>, cannot be registered; the page shows the parsed host', async () => {
  const worker = await startWorker({ listener, upstream, private: [] });
  try {
    const register = (uris) => fetch(new URL('/register', worker.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: uris, token_endpoint_auth_method: 'none' }) });
    for (const uri of ['https://evil.example\\claude.ai/cb', 'http://evil.example\\claude.ai/cb', 'https://evil.example\\@claude.ai/cb', 'http://127.attacker.example/cb', 'https://ｃｌａｕｄｅ.ai/cb', 'https://claude.ai\t/cb']) {
      const res = await register([uri]);
      const body = await res.json();
      assert.deepEqual([res.status, body.error], [400, 'invalid_redirect_uri'], `${JSON.stringify(uri)}: ${JSON.stringify(body)}`);
    }
    // The consent page names the host the browser will go to, as the URL parser reads it.
    const res = await register(['https://CLAUDE.ai:443/api/cb']);
    assert.equal(res.status, 201);
    const client = await res.json();
    const challenge = createHash('sha256').update('v'.repeat(43)).digest('base64url');
    const params = { response_type: 'code', client_id: client.client_id, redirect_uri: 'https://CLAUDE.ai:443/api/cb', code_challenge: challenge, code_challenge_method: 'S256', resource: new URL('/secure/mcp', worker.url).href };
    const page = await (await fetch(new URL(`/authorize?${new URLSearchParams(params)}`, worker.url))).text();
    assert.match(page, /<dd id="redirect-host">claude\.ai<\/dd>/);
  } finally {
    await worker.close();
  }
});
