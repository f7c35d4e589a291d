// Stateless mode: no session ids, no Durable Object, a collection timeout, and per-request
// credentials in params._meta.auth for tools that opt in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, post, lines, testConfig } from './harness.mjs';

let server;
let url;
before(async () => {
  server = await startServer();
  url = new URL('/stateless/mcp', server.url);
});
after(() => server.close());

const call = (id, name, args = {}, meta) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta && { _meta: meta }) } });

test('initialize and calls without any session id', async () => {
  const init = await post(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18' } });
  assert.equal(init.status, 200);
  assert.equal(init.headers.get('mcp-session-id'), null);
  assert.equal((await init.json()).result.protocolVersion, '2025-06-18');
  const res = await post(url, call(1, 'echo', { message: 'alone' }), { 'mcp-protocol-version': '2025-06-18' });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('mcp-session-id'), null);
  assert.deepEqual((await res.json()).result.structuredContent, { message: 'alone' });
  // No MCP-Protocol-Version header: 2025-03-26 is assumed, which predates structuredContent.
  const old = await post(url, call(2, 'echo', { message: 'm' }));
  assert.deepEqual((await old.json()).result, { content: [{ type: 'text', text: '{"message":"m"}' }] });
  const note = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(note.status, 202);
});

test('a request still running at the collection timeout gets a -32603 timeout error', async () => {
  const res = await post(url, call(3, 'hold', { key: 'stateless-timeout' }));
  assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 3, error: { code: -32603, message: 'Internal error: the request did not finish within 500 ms' } });
  server.upstream.release('stateless-timeout', 'too late');
});

test('a tool whose own timeout is not longer than the collection timeout ends with its upstream timeout', async () => {
  for (const [tool, key, ms] of [['hang_briefly', 'stateless-brief', 200], ['hang_evenly', 'stateless-even', 500]]) {
    const res = await post(url, call(4, tool, { key }), { 'mcp-protocol-version': '2025-06-18' });
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 4, result: { content: [{ type: 'text', text: `The upstream did not answer within ${ms} ms.` }], isError: true } });
    while (!server.upstream.aborted.has(key)) await new Promise((r) => setTimeout(r, 10));
  }
});

test('NDJSON: each reply streams as it completes; the timed-out one ends with its error', async () => {
  const body = [call('slow', 'hold', { key: 'stateless-nd' }), call('fast', 'echo', { message: 'quick' })].map((m) => JSON.stringify(m)).join('\n');
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body });
  assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
  const got = [];
  for await (const line of lines(res)) got.push(JSON.parse(line));
  assert.deepEqual(got.map((r) => r.id), ['fast', 'slow']);
  assert.equal(got[1].error.code, -32603);
  server.upstream.release('stateless-nd', 'too late');
});

test('params._meta.auth reaches only the tools that opt in', async () => {
  const meta = { auth: { token: 'tenant-42' } };
  const before = server.upstream.seen.length;
  const tenant = await post(url, call(4, 'whoami', {}, meta), { 'mcp-protocol-version': '2025-06-18' });
  assert.equal(server.upstream.seen.slice(before).find((r) => r.url === '/whoami').headers.authorization, 'Bearer tenant-42');
  // The upstream echoed the credential; it never comes back to the client.
  assert.deepEqual((await tenant.json()).result.structuredContent, { authorization: 'Bearer [redacted]' });
  const plain = await post(url, call(5, 'whoami_plain', {}, meta), { 'mcp-protocol-version': '2025-06-18' });
  assert.deepEqual((await plain.json()).result.structuredContent, { authorization: null });
});

test('GET and DELETE have no session to serve: 405', async () => {
  assert.equal((await fetch(url, { headers: { accept: 'text/event-stream' } })).status, 405);
  assert.equal((await fetch(url, { method: 'DELETE' })).status, 405);
  assert.equal((await fetch(new URL('/stateless/sse', server.url))).status, 404);
});

test('the SSRF guard remembers only what it passed, and for the hosts it was checked against', async () => {
  // The Worker remembers the guard's verdict on the last upstream URL it passed (issue 45): a
  // server that does not list 127.0.0.1 must still be refused the URL another server was just
  // allowed, and the allowed server must still reach it after the refusal.
  const config = JSON.parse(readFileSync(testConfig, 'utf8'));
  const guarded = { ...config.servers.find((s) => s.route === '/stateless/mcp'), route: '/guarded/mcp', name: 'guarded' };
  delete guarded.privateUpstreams;
  config.servers.push(guarded);
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-guard-')), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const own = await startServer({ config: file });
  try {
    const allowed = new URL('/stateless/mcp', own.url);
    const refused = new URL('/guarded/mcp', own.url);
    const echo = async (at, message) => (await (await post(at, call(9, 'echo', { message }), { 'mcp-protocol-version': '2025-06-18' })).json()).result;
    assert.deepEqual((await echo(allowed, 'first')).structuredContent, { message: 'first' });
    const reached = own.upstream.seen.length;
    const result = await echo(refused, 'second');
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /the upstream host 127\.0\.0\.1 is a loopback address; list it in the server's privateUpstreams/);
    assert.equal(own.upstream.seen.length, reached, 'the refused call reached the upstream');
    assert.deepEqual((await echo(allowed, 'third')).structuredContent, { message: 'third' });
  } finally {
    await own.close();
  }
});
