// The 2024-11-05 HTTP+SSE transport: GET /sse and POST /messages, as n8n's MCP Client Tool uses it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { startServer, sseEvents, INIT } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server.close());

test('SDK SSEClientTransport (latest 1.x): initialize, list tools, call echo', async () => {
  const client = new Client({ name: 'e2e-legacy', version: '1.0.0' });
  const transport = new SSEClientTransport(new URL('/sse', server.url));
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'echo'));
    const result = await client.callTool({ name: 'echo', arguments: { message: 'over legacy SSE' } });
    assert.deepEqual(result.structuredContent, { message: 'over legacy SSE' });
  } finally {
    await client.close();
  }
});

test('raw: endpoint event, 202 for each POST, replies as `event: message`, keepalive comments', async () => {
  const closing = new AbortController();
  const res = await fetch(new URL('/sse', server.url), { headers: { accept: 'text/event-stream' }, signal: closing.signal });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const until = async (pattern) => {
    while (!pattern.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before ${pattern}: ${text}`);
      text += decoder.decode(value, { stream: true });
    }
    return text.match(pattern);
  };
  const [, endpoint, sid] = await until(/^event: endpoint\ndata: (\/messages\?sessionId=([0-9a-f-]{36}))\n\n/);
  const messages = new URL(endpoint, server.url);
  const postMessage = (body) => fetch(messages, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  const init = await postMessage({ ...INIT, params: { ...INIT.params, protocolVersion: '2024-11-05' } });
  assert.equal(init.status, 202);
  assert.equal(await init.text(), '');
  const [, initReply] = await until(/event: message\ndata: (\{"jsonrpc":"2.0","id":0,[^\n]*)\n\n/);
  assert.equal(JSON.parse(initReply).result.protocolVersion, '2024-11-05');
  assert.equal((await postMessage({ jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
  assert.equal((await postMessage({ jsonrpc: '2.0', id: 'e', method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } })).status, 202);
  const [, callReply] = await until(/event: message\ndata: (\{"jsonrpc":"2.0","id":"e",[^\n]*)\n\n/);
  assert.deepEqual(JSON.parse(callReply).result.content, [{ type: 'text', text: '{"message":"hi"}' }]);
  await until(/\n: keepalive\n\n/);

  // Errors: no sessionId, an unknown one, a body that is not JSON.
  const noId = await fetch(new URL('/messages', server.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(noId.status, 400);
  const unknown = await fetch(new URL('/messages?sessionId=6c0f8a3e-0000-4000-8000-000000000000', server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(unknown.status, 404);
  assert.deepEqual(await unknown.json(), { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
  const garbage = await fetch(messages, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
  assert.equal(garbage.status, 400);
  assert.equal((await garbage.json()).error.code, -32700);

  // When the stream closes, the session ends: once a keepalive finds the client gone (this
  // server sends one a second), its next message finds no session.
  closing.abort();
  let status;
  for (let i = 0; i < 20 && status !== 404; i++) {
    await new Promise((r) => setTimeout(r, 500));
    status = (await postMessage({ jsonrpc: '2.0', id: 2, method: 'ping' })).status;
  }
  assert.equal(status, 404);
});

test('a Streamable HTTP session id is not a legacy session', async () => {
  const { openSession } = await import('./harness.mjs');
  const sid = await openSession(server.mcpUrl);
  const res = await fetch(new URL(`/messages?sessionId=${sid}`, server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(res.status, 404);
});
