// Safe by construction (issue 38), black-box in workerd: the DNS-rebinding Host check trusts
// `CF-Connecting-IP` only at Cloudflare's edge; the deployment's own keys have a minimum length,
// enforced when the Worker starts; a session id a client sends names a session's object and
// never another of the namespace's (the authorization server's, the live configuration's, the
// stateless task store).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INIT, startMiniflare, startServer } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';

/** A POST of `body` to the worker on `port`, with exactly these headers (`Host` included). */
function raw(port, path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, agent: false, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('a rebinding page on a local server is refused, whatever CF-Connecting-IP it sends', async () => {
  for (const bindings of [{}, { MCP_EDGE_LOCAL: '' }]) {
    // With the launcher's local marker (npm start, mcp-edge dev, the tests), and without it (a
    // plain `wrangler dev`): the page's Host names the local port either way.
    const server = await startServer({ bindings });
    try {
      const port = Number(server.url.port);
      const evil = `rebind.evil:${port}`;
      const forged = await raw(port, '/mcp', { host: evil, origin: `http://${evil}`, 'cf-connecting-ip': '203.0.113.7' }, INIT);
      assert.equal(forged.status, 403, `${JSON.stringify(bindings)}: ${forged.body}`);
      assert.match(forged.body, /rebind\.evil/);
      const plain = await raw(port, '/mcp', { host: evil, origin: `http://${evil}` }, INIT);
      assert.equal(plain.status, 403);
      // The loopback host the server was started on is served.
      assert.equal((await raw(port, '/mcp', { host: `127.0.0.1:${port}` }, INIT)).status, 200);
    } finally {
      await server.close();
    }
  }
});

test("at Cloudflare's edge the hostname routed the request: no Host allowlist to configure", async () => {
  const server = await startServer({ bindings: { MCP_EDGE_LOCAL: '' } });
  try {
    const port = Number(server.url.port);
    // As the edge passes a request on: a hostname without a local port, the client's address.
    const edge = await raw(port, '/mcp', { host: 'my-worker.example.workers.dev', 'cf-connecting-ip': '203.0.113.7' }, INIT);
    assert.equal(edge.status, 200, edge.body);
    // The same under the launcher's local marker: refused, since locally anyone can send both.
    const local = await startServer();
    try {
      const res = await raw(Number(local.url.port), '/mcp', { host: 'my-worker.example.workers.dev', 'cf-connecting-ip': '203.0.113.7' }, INIT);
      assert.equal(res.status, 403);
    } finally {
      await local.close();
    }
  } finally {
    await server.close();
  }
});

test("a key shorter than 32 characters is a fault every request answers with, and never signs", async () => {
  for (const [name, value] of [['MCP_EDGE_ADMIN_TOKEN', 'hunter2'], ['CALLBACK_SIGNING_KEY', 'short-callback-key'], ['OAUTH_SIGNING_KEY', 'x'.repeat(31)]]) {
    const { mf, url } = await startMiniflare({ bindings: { [name]: value } });
    try {
      const res = await fetch(new URL('/mcp', url), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(INIT) });
      const body = await res.text();
      assert.equal(res.status, 500, name);
      assert.match(body, new RegExp(`the secret ${name} is ${[...value].length} characters long; it must have at least 32`));
      assert.ok(!body.includes(value), 'the value itself is never shown');
    } finally {
      await mf.dispose();
    }
  }
});

test("a session id names a session's object, never another of the namespace's", async () => {
  // A server with a 2026-07-28 task store: anonymous callers' tasks are kept in one object
  // (`tasks:/mcp`), whose name a client could once send as its session id and end.
  const upstream = await startTestUpstream();
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-names-'));
  const config = { servers: [{ route: '/mcp', name: 'names', version: '1', privateUpstreams: ['127.0.0.1'], tools: [{ name: 'job', inputSchema: { type: 'object', properties: { key: { type: 'string' } } }, execution: 'callback', http: { url: '{+env.UPSTREAM_URL}/jobs/{key}' } }] }] };
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  const { mf, url } = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url });
  try {
    const mcp = new URL('/mcp', url);
    const revision = async (method, params, name) => {
      const capabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
      const body = { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': capabilities } } };
      const res = await fetch(mcp, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name }, body: JSON.stringify(body) });
      return res.json();
    };
    const created = await revision('tools/call', { name: 'job', arguments: { key: 'n1' } }, 'job');
    const taskId = created.result.taskId ?? created.result.task?.taskId;
    assert.ok(taskId, JSON.stringify(created));
    const send = (sessionId, method = 'POST') =>
      fetch(mcp, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
        body: method === 'POST' ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/list' }) : undefined,
      });
    // The names of the stateless task store's, the authorization server's, the live
    // configuration's and the health figures' objects, and ids that are no UUID we issued.
    for (const id of ['tasks:/mcp', 'oauth', 'oauth-revocations', 'live-config', 'health', 'registry:/mcp', 'session:abc', 'not-a-session']) {
      for (const method of ['POST', 'GET', 'DELETE']) {
        const res = await send(id, method);
        assert.equal(res.status, 404, `${method} ${id}`);
        assert.match(await res.text(), /Session not found/);
      }
    }
    // The task store is untouched: its task is still there.
    const got = await revision('tasks/get', { taskId }, taskId);
    assert.equal(got.result?.status, 'working', JSON.stringify(got));
    // A real session is served as ever.
    const init = await fetch(mcp, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(INIT) });
    const id = init.headers.get('mcp-session-id');
    assert.match(id, /^[0-9a-f]{32}-[0-9a-f]{12}-[0-9a-f]{64}$/);
    assert.equal((await send(id)).status, 200);
  } finally {
    await mf.dispose();
    await upstream.close();
  }
});
