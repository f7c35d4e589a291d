// Catalog mode ("toolDiscovery": "catalog", /catalog/mcp): the official SDK client sees three
// tools, searches and describes the catalog, and calls its tools through call_tool with the same
// results, errors, progress and input requests as a direct tools/call of the same tool on the
// plain server (/mcp), which configures the same tools without tags.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startServer, post, openSession, send2026 } from './harness.mjs';

let server;
let catalogUrl;
before(async () => {
  server = await startServer();
  catalogUrl = new URL('/catalog/mcp', server.url);
});
after(() => server.close());

/** An SDK client on `url`, closed (and its session ended) after `body`; `setup` runs before it connects. */
async function withClient(url, body, { setup, ...options } = {}) {
  const client = new Client({ name: 'e2e-catalog', version: '1.0.0' }, options);
  setup?.(client);
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  try {
    return await body(client);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
}

/** A raw tools/call on a session: the reply's exact text. */
async function rawCall(url, sid, params) {
  const res = await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params }, { 'mcp-session-id': sid });
  assert.equal(res.status, 200);
  return res.text();
}

test('tools/list lists exactly search_tools, describe_tool and call_tool', async () => {
  await withClient(catalogUrl, async (client) => {
    const { tools, nextCursor } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['search_tools', 'describe_tool', 'call_tool']);
    assert.equal(nextCursor, undefined);
    for (const tool of tools) {
      assert.equal(typeof tool.title, 'string');
      assert.ok(tool.description.length > 50, tool.name);
      assert.equal(tool.inputSchema.type, 'object');
    }
    assert.deepEqual(tools.map((t) => t.annotations.readOnlyHint), [true, true, false]);
    assert.deepEqual(tools[1].inputSchema.required, ['name']);
    assert.ok(tools[0].outputSchema && tools[1].outputSchema && !tools[2].outputSchema);
  });
});

test('search_tools ranks by words and filters by tags; describe_tool is the plain listing with tags', async () => {
  const plain = await withClient(server.mcpUrl, (client) => client.listTools());
  await withClient(catalogUrl, async (client) => {
    await client.listTools(); // the SDK checks structured results against the listed outputSchema
    const found = await client.callTool({ name: 'search_tools', arguments: { query: 'echoes a message' } });
    assert.deepEqual(found.structuredContent, {
      tools: [{ name: 'echo', description: 'Echoes a message through the test upstream.', tags: ['testing', 'messages'] }],
      total: 1,
    });
    assert.deepEqual(found.content, [{ type: 'text', text: JSON.stringify(found.structuredContent) }]);
    const streaming = await client.callTool({ name: 'search_tools', arguments: { query: 'stream progress', tags: ['TESTING'] } });
    assert.deepEqual(streaming.structuredContent.tools.map((t) => t.name), ['stream_hold']);
    const browsed = await client.callTool({ name: 'search_tools', arguments: { tags: ['testing'], limit: 2 } });
    assert.deepEqual([browsed.structuredContent.tools.map((t) => t.name), browsed.structuredContent.total], [['echo', 'lookup'], 3]);
    const none = await client.callTool({ name: 'search_tools', arguments: { query: 'the of a zebra' } });
    assert.deepEqual(none.structuredContent, { tools: [], total: 0 });

    for (const name of ['echo', 'lookup', 'get_current_time']) {
      const described = await client.callTool({ name: 'describe_tool', arguments: { name } });
      const { tags, ...definition } = described.structuredContent;
      assert.deepEqual(definition, plain.tools.find((t) => t.name === name), name);
      assert.ok(tags.length > 0);
      assert.equal(described.content[0].text, JSON.stringify(described.structuredContent));
    }
    const unknown = await client.callTool({ name: 'describe_tool', arguments: { name: 'nope' } });
    assert.deepEqual(unknown, { content: [{ type: 'text', text: 'unknown tool "nope": search_tools finds this server\'s tools and their names' }], isError: true });
  });
});

test('call_tool gives what a direct tools/call of the same tool gives, byte for byte', async () => {
  const direct = await withClient(server.mcpUrl, (client) => client.callTool({ name: 'echo', arguments: { message: 'same bytes' } }));
  await withClient(catalogUrl, async (client) => {
    const through = await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'same bytes' } } });
    assert.equal(JSON.stringify(through.structuredContent), JSON.stringify(direct.structuredContent));
    assert.deepEqual(through, direct);
    // A catalogued tool's own name works too, as if it were listed.
    const own = await client.callTool({ name: 'lookup', arguments: { city: 'Oslo' } });
    assert.deepEqual(own.structuredContent, { path: '/inspect/Oslo', query: '' });
  });
  // The whole reply, as the wire carries it, for a session of each kind of validation report.
  for (const version of ['2025-11-25', '2025-06-18']) {
    const plainSid = await openSession(server.mcpUrl, version);
    const catalogSid = await openSession(catalogUrl, version);
    for (const args of [{ message: 'wire' }, { message: 42 }, {}]) {
      const expected = await rawCall(server.mcpUrl, plainSid, { name: 'echo', arguments: args });
      assert.equal(await rawCall(catalogUrl, catalogSid, { name: 'call_tool', arguments: { name: 'echo', arguments: args } }), expected, `${version} ${JSON.stringify(args)}`);
    }
    const unknown = await rawCall(server.mcpUrl, plainSid, { name: 'nope', arguments: {} });
    assert.equal(await rawCall(catalogUrl, catalogSid, { name: 'call_tool', arguments: { name: 'nope', arguments: {} } }), unknown);
    assert.deepEqual(JSON.parse(unknown).error, { code: -32602, message: 'Invalid params: unknown tool "nope"' });
  }
  const echoes = server.upstream.seen.filter((r) => r.url === '/echo');
  assert.ok(echoes.every((r) => r.headers['x-api-key'] === 'test-key-7f3a'));
});

test('through call_tool: a validation error, an unknown tool, progress and an input request', async () => {
  await withClient(
    catalogUrl,
    async (client) => {
      const invalid = await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 42 } } });
      assert.deepEqual(invalid, { content: [{ type: 'text', text: 'invalid arguments for tool "echo": /message: expected string, got integer (type)' }], isError: true });
      await assert.rejects(client.callTool({ name: 'call_tool', arguments: { name: 'nope' } }), (e) => e.code === -32602 && e.message.includes('unknown tool "nope"'));

      const progress = [];
      const streamed = client.callTool({ name: 'call_tool', arguments: { name: 'stream_hold', arguments: { key: 'catalog-1' } } }, undefined, { onprogress: (p) => progress.push(p) });
      await server.upstream.waitForHold('catalog-1');
      server.upstream.release('catalog-1', 'released');
      assert.deepEqual((await streamed).content, [{ type: 'text', text: 'released' }]);
      assert.deepEqual(progress, [{ progress: 1, total: 2, message: 'started' }]);

      const greeted = await client.callTool({ name: 'call_tool', arguments: { name: 'ask_name', arguments: { topic: 'catalogs' } } });
      assert.deepEqual(greeted.content, [{ type: 'text', text: 'Hello Ada (accept), about catalogs; arguments: {"topic":"catalogs"}' }]);
    },
    {
      capabilities: { elicitation: {} },
      setup: (client) => client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } })),
    },
  );
});

test('the 2026-07-28 revision: search and call_tool without a session', async () => {
  const send = (id, method, params) => send2026(catalogUrl, id, method, params);
  const list = await send(1, 'tools/list', {});
  assert.deepEqual(list.result.tools.map((t) => t.name), ['search_tools', 'describe_tool', 'call_tool']);
  assert.equal(list.result.resultType, 'complete');
  const found = await send(2, 'tools/call', { name: 'search_tools', arguments: { query: 'current time' } });
  assert.deepEqual(found.result.structuredContent.tools.map((t) => t.name), ['get_current_time']);
  const called = await send(3, 'tools/call', { name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'stateless' } } });
  assert.deepEqual([called.result.resultType, called.result.structuredContent], ['complete', { message: 'stateless' }]);
});
