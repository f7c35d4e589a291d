// The official MCP TypeScript SDK clients against the worker: the latest 1.x, and 1.16.0, the
// version n8n-nodes-mcp pins.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client as LatestClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LatestTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as OldClient } from 'mcp-sdk-1-16/client/index.js';
import { StreamableHTTPClientTransport as OldTransport } from 'mcp-sdk-1-16/client/streamableHttp.js';
import { startServer } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server.close());

const clients = [
  ['latest 1.x', LatestClient, LatestTransport, '2025-11-25'],
  ['1.16.0 (n8n-nodes-mcp)', OldClient, OldTransport, '2025-06-18'],
];

for (const [label, Client, Transport, version] of clients) {
  test(`SDK ${label}: initialize, list tools, call echo`, async () => {
    const client = new Client({ name: 'e2e-sdk', version: '1.0.0' });
    const transport = new Transport(server.mcpUrl);
    await client.connect(transport);
    try {
      assert.match(transport.sessionId, /^[0-9a-f]{32}-[0-9a-f]{12}-[0-9a-f]{64}$/);
      assert.deepEqual(client.getServerVersion(), { name: 'mcp-edge-test', version: '0.0.1' });
      assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: false }, logging: {}, resources: { subscribe: true, listChanged: false } });
      assert.equal(transport.protocolVersion ?? version, version);

      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['echo', 'get_current_time', 'lookup', 'fail', 'slow', 'bad_json', 'hold', 'stream_hold', 'poll_hold', 'ask_name']);
      assert.deepEqual(tools[0].inputSchema, { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });

      const result = await client.callTool({ name: 'echo', arguments: { message: `hello from ${label}` } });
      assert.equal(result.isError, undefined);
      assert.deepEqual(result.structuredContent, { message: `hello from ${label}` });
      assert.equal(result.content[0].type, 'text');
      assert.ok(result.content[0].text.includes(`hello from ${label}`));

      const time = await client.callTool({ name: 'get_current_time', arguments: { timezone: 'Europe/Berlin' } });
      assert.equal(time.structuredContent.timezone, 'Europe/Berlin');
      assert.ok(Math.abs(time.structuredContent.unixMs - Date.now()) < 60_000);

      const failed = await client.callTool({ name: 'fail', arguments: {} });
      assert.equal(failed.isError, true);
      await client.ping();
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });
}

test('the echo call reached the upstream with the configured secret header', () => {
  const echo = server.upstream.seen.filter((r) => r.url === '/echo');
  assert.ok(echo.length >= 2);
  for (const r of echo) {
    assert.equal(r.method, 'POST');
    assert.equal(r.headers['x-api-key'], 'test-key-7f3a');
    assert.equal(r.headers['content-type'], 'application/json');
  }
});

test('elicitation round trip: the upstream asks, the SDK client answers, the upstream is called again', async () => {
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const client = new LatestClient({ name: 'e2e-elicit', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: { name: 'Ada' } };
  });
  const transport = new LatestTransport(server.mcpUrl);
  await client.connect(transport);
  try {
    const result = await client.callTool({ name: 'ask_name', arguments: { topic: 'billing' } });
    assert.deepEqual(asked, ['Who is asking about billing?']);
    assert.deepEqual(result.content, [{ type: 'text', text: 'Hello Ada (accept), about billing; arguments: {"topic":"billing"}' }]);
  } finally {
    await transport.terminateSession();
    await client.close();
  }

  // A client without the capability gets a tool error, not a request it cannot answer.
  const plain = new LatestClient({ name: 'e2e-plain', version: '1.0.0' });
  const plainTransport = new LatestTransport(server.mcpUrl);
  await plain.connect(plainTransport);
  try {
    const refused = await plain.callTool({ name: 'ask_name', arguments: { topic: 'x' } });
    assert.equal(refused.isError, true);
    assert.equal(refused.content[0].text, 'This tool needs elicitation/create, but the client did not declare the elicitation capability.');
  } finally {
    await plainTransport.terminateSession();
    await plain.close();
  }
});
