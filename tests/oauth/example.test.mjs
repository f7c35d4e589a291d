// The shipped example, black-box, as its README runs it: `MCP_EDGE_CONFIG=examples/oauth/mcp-edge.json
// npm start -- --var ALICE_PASSWORD:…`. The TypeScript SDK's OAuth client finds the
// authorization server from the 401, registers, and alice signs in on the page (its form, posted
// as a browser would); then `whoami` tells what the demo upstream was told about the caller.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { root } from '../e2e/harness.mjs';
import { freePort, serveWith } from '../e2e/serving.mjs';
import { MemoryOAuthProvider, signInByForm } from './worker.mjs';

const PASSWORD = 'wonderland-4c1e';

const signInAsAlice = (url) => signInByForm(url, { username: 'alice', password: PASSWORD });

test('examples/oauth with npm start: the SDK signs alice in, and the upstream hears who called', { timeout: 300_000 }, async () => {
  const port = await freePort();
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  const env = { ...process.env, PORT: String(port), DEMO_UPSTREAM_PORT: String(await freePort()), MCP_EDGE_CONFIG: join(root, 'examples', 'oauth', 'mcp-edge.json') };
  const inspector = await freePort();
  const { stop } = await serveWith(process.execPath, [join(root, 'scripts', 'start.mjs'), '--inspector-port', String(inspector), '--var', `ALICE_PASSWORD:${PASSWORD}`], { cwd: root, env }, url);
  try {
    const provider = new MemoryOAuthProvider({ redirectUrl: 'http://127.0.0.1:9/callback', clientName: 'Example client', authorize: signInAsAlice });
    await assert.rejects(new Client({ name: 'example', version: '1' }).connect(new StreamableHTTPClientTransport(url, { authProvider: provider })), UnauthorizedError);
    assert.equal(provider.callback.iss, url.origin);
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(provider.callback.code);
    const client = new Client({ name: 'example', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    try {
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo', 'whoami']);
      const who = await client.callTool({ name: 'whoami', arguments: {} });
      assert.deepEqual(who.structuredContent, { message: 'alice <alice@example.com>, roles: admin' });
      const echoed = await client.callTool({ name: 'echo', arguments: { message: 'signed in' } });
      assert.deepEqual(echoed.structuredContent, { message: 'signed in' });
    } finally {
      await client.close();
    }
  } finally {
    await stop();
  }
});
