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
      assert.match(transport.sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.deepEqual(client.getServerVersion(), { name: 'mcp-edge-test', version: '0.0.1' });
      assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: false }, logging: {} });
      assert.equal(transport.protocolVersion ?? version, version);

      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['echo', 'get_current_time', 'lookup', 'fail', 'slow', 'bad_json', 'hold', 'stream_hold', 'poll_hold']);
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
