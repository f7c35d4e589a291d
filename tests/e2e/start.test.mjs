// The README promise: `npm start` serves the shipped default configuration with `wrangler dev`,
// and a new user's first three steps work against it. Then an edit of the configuration is
// served by the running `npm start`, with no cargo run and no restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { root, lines } from './harness.mjs';
import { freePort, serveWith, toolNamesWhen } from './serving.mjs';

test('npm start: the SDK lists and calls echo, NDJSON streams lines, a made-up session gets 404, an edit is served', { timeout: 300_000 }, async () => {
  // The shipped configuration, as a copy this test may edit.
  const config = join(mkdtempSync(join(tmpdir(), 'mcp-edge-start-')), 'mcp-edge.json');
  copyFileSync(join(root, 'mcp-edge.json'), config);
  const port = await freePort();
  const upstreamPort = await freePort();
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  const env = { ...process.env, PORT: String(port), DEMO_UPSTREAM_PORT: String(upstreamPort), MCP_EDGE_CONFIG: config };
  // Its own inspector port: wrangler's default, 9229, may be another test's wrangler dev.
  const inspector = await freePort();
  const { output, stop } = await serveWith(process.execPath, [join(root, 'scripts', 'start.mjs'), '--inspector-port', String(inspector)], { cwd: root, env }, url);
  try {

    const client = new Client({ name: 'new-user', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(url);
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['echo', 'get_current_time']);
    const result = await client.callTool({ name: 'echo', arguments: { message: 'hello from npm start' } });
    assert.ok(result.content[0].text.includes('hello from npm start'));
    const time = await client.callTool({ name: 'get_current_time', arguments: {} });
    assert.equal(time.structuredContent.timezone, 'UTC');

    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/x-ndjson', 'mcp-session-id': transport.sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: '2', method: 'tools/list', params: {} }),
    });
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const got = [];
    for await (const line of lines(res)) got.push(JSON.parse(line));
    assert.equal(got.length, 1);
    assert.equal(got[0].result.tools.length, 2);

    const bogus = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 'made-up-session' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
    });
    assert.equal(bogus.status, 404);
    assert.deepEqual(await bogus.json(), { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    await client.close();

    // A new tool, saved while `npm start` runs: served without a restart, and without cargo.
    const before = output.length;
    const edited = JSON.parse(readFileSync(config, 'utf8'));
    edited.servers[0].tools.push({ name: 'shout', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, http: { method: 'POST', url: '{+env.DEMO_UPSTREAM_URL}/echo' } });
    writeFileSync(config, JSON.stringify(edited, null, 2));
    const names = await toolNamesWhen(url, (n) => n.includes('shout'), 60_000, output);
    assert.deepEqual(names, ['echo', 'get_current_time', 'shout']);
    const after = output.slice(before).join('');
    assert.ok(!after.includes('[setup] worker-build') && !after.includes('Compiling'), `the edit ran a Rust build:\n${after}`);
  } finally {
    await stop();
  }
});
