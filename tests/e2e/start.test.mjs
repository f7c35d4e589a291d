// The README promise: `npm start` serves the shipped default configuration with `wrangler dev`,
// and a new user's first three steps work against it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { root, lines } from './harness.mjs';

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitForServer(url, child, output) {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output.join('')}`);
    try {
      const res = await fetch(url, { method: 'OPTIONS' });
      if (res.status === 204) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`npm start did not serve ${url}:\n${output.join('')}`);
}

test('npm start: the SDK lists and calls echo, NDJSON streams lines, a made-up session gets 404', { timeout: 240_000 }, async () => {
  const port = await freePort();
  const upstreamPort = await freePort();
  const output = [];
  const child = spawn(process.execPath, [join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    env: { ...process.env, PORT: String(port), DEMO_UPSTREAM_PORT: String(upstreamPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout.on('data', (d) => output.push(String(d)));
  child.stderr.on('data', (d) => output.push(String(d)));
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  try {
    await waitForServer(url, child, output);

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
  } finally {
    process.kill(-child.pid, 'SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
  }
});
