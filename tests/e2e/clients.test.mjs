// The compatibility table of the README, row by row: real clients against the worker in workerd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2Http, SSEClientTransport as V2Sse } from '@modelcontextprotocol/client';
import { Client as OldClient } from 'mcp-sdk-1-16/client/index.js';
import { SSEClientTransport as OldSse } from 'mcp-sdk-1-16/client/sse.js';
import { startServer, root, lines, run } from './harness.mjs';
import { N8N_SDKS, PYTHON_SDKS, n8nNode, pythonSdk } from './clients.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server.close());


const endpoint = (transport) => new URL(transport === 'sse' ? '/sse' : '/mcp', server.url).href;

async function callEcho(client, transport, message) {
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'echo'));
    const result = await client.callTool({ name: 'echo', arguments: { message } });
    assert.equal(result.content[0].text, JSON.stringify({ message }));
  } finally {
    await client.close();
  }
}

test('TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0): Streamable HTTP and SSE', async () => {
  await callEcho(new V2Client({ name: 'v2', version: '1' }), new V2Http(new URL(endpoint('http'))), 'v2 http');
  await callEcho(new V2Client({ name: 'v2', version: '1' }), new V2Sse(new URL(endpoint('sse'))), 'v2 sse');
});

test('TypeScript SDK 1.16.0: SSEClientTransport', async () => {
  await callEcho(new OldClient({ name: 'old', version: '1' }), new OldSse(new URL(endpoint('sse'))), '1.16 sse');
});

for (const sdk of N8N_SDKS) {
  for (const transport of ['http', 'sse']) {
    test(`n8n-nodes-mcp 0.1.37 (SDK ${sdk ?? 'as npm resolves it'}), ${transport === 'http' ? 'HTTP Streamable' : 'SSE'}: List Tools and Execute Tool`, { timeout: 180_000 }, async () => {
      const dir = n8nNode(sdk);
      const node = async (operation) => {
        const r = await run(process.execPath, [join(root, 'tests', 'e2e', 'n8n_node.cjs'), dir, transport, operation, endpoint(transport)]);
        assert.equal(r.status, 0, `${operation}: ${r.stderr}`);
        return JSON.parse(r.stdout);
      };
      const listed = await node('listTools');
      if (sdk) assert.equal(listed.sdkVersion, sdk);
      const tools = listed.output[0][0].json.tools;
      assert.ok(tools.some((t) => t.name === 'echo' && t.schema.required[0] === 'message'));
      const executed = await node('executeTool');
      assert.deepEqual(executed.output[0][0].json.result.content, [{ type: 'text', text: JSON.stringify({ message: `n8n ${transport}` }) }]);
    });
  }
}

for (const version of PYTHON_SDKS) {
  for (const transport of ['http', 'sse']) {
    test(`Python SDK mcp ${version}: ${transport === 'http' ? 'streamable HTTP' : 'SSE'} client`, { timeout: 300_000 }, async () => {
      const python = pythonSdk(version);
      const r = await run(python, [join(root, 'tests', 'e2e', 'python_client.py'), endpoint(transport), transport]);
      assert.equal(r.status, 0, r.stderr);
      const got = JSON.parse(r.stdout.trim().split('\n').pop());
      assert.equal(got.server, 'mcp-edge-test');
      assert.ok(got.tools.includes('echo'));
      assert.equal(got.text, '{"message":"from python"}');
      assert.equal(got.isError, false);
    });
  }
}

test('a plain NDJSON reader, as in seed 004', async () => {
  const init = await fetch(endpoint('http'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', accept: 'application/x-ndjson' },
    body: '{"jsonrpc": "2.0", "method": "initialize", "id": 0, "params": {}}\n',
  });
  const sid = init.headers.get('mcp-session-id');
  const response = await fetch(endpoint('http'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', 'mcp-session-id': sid },
    body: '{"jsonrpc": "2.0", "method": "tools/list", "id": 1}\n',
  });
  const got = [];
  for await (const line of lines(response)) if (line.trim()) got.push(JSON.parse(line));
  assert.equal(got.length, 1);
  assert.equal(got[0].id, 1);
  assert.ok(got[0].result.tools.length > 0);
});

test('curl -N shows NDJSON lines', async () => {
  const curl = (args) => run('curl', ['-sS', ...args], 30_000);
  const init = await curl(['-i', '-X', 'POST', endpoint('http'), '-H', 'Content-Type: application/json', '-H', 'Accept: application/json, text/event-stream', '-d', '{"jsonrpc":"2.0","id":"1","method":"initialize","params":{}}']);
  assert.equal(init.status, 0, init.stderr);
  const sid = init.stdout.match(/^mcp-session-id: (\S+)/im)[1];
  const r = await curl(['-N', '-X', 'POST', endpoint('http'), '-H', 'Content-Type: application/json', '-H', 'Accept: application/x-ndjson', '-H', `Mcp-Session-Id: ${sid}`, '-d', '{"jsonrpc":"2.0","id":"2","method":"tools/call","params":{"name":"echo","arguments":{"message":"curl"}}}']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '{"jsonrpc":"2.0","id":"2","result":{"content":[{"type":"text","text":"{\\"message\\":\\"curl\\"}"}],"structuredContent":{"message":"curl"}}}\n');
});
