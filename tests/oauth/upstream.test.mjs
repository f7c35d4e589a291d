// An upstream MCP server behind mcp-edge's own sign-in: what a Claude connector does. The
// official @modelcontextprotocol/server-everything has no sign-in of its own; mcp-edge serves its
// tools on a server with `"auth": {"oauth": true}`. The SDK's OAuth client meets the 401,
// registers, and alice signs in on mcp-edge's page; then the upstream's tools are listed under
// their prefix and called, and the upstream heard who called (the caller's name as a header),
// never the client's token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { freePort, startEverything, startOwn } from '../e2e/mcp_servers.mjs';
import { MemoryOAuthProvider, PASSWORDS, readConfig, signInByForm, startOAuthWorker } from './worker.mjs';

let everything;
let recorder;
let worker;
before(async () => {
  everything = await startEverything(await freePort());
  recorder = await startOwn('echo');
  const config = readConfig();
  // Long enough for the test's steps.
  config.oauth.accessTokenTtlSeconds = 300;
  config.servers = [
    {
      route: '/mcp',
      name: 'signed-in-gateway',
      version: '1',
      privateUpstreams: ['127.0.0.1', 'localhost'],
      auth: { oauth: true },
      upstreams: [
        { name: 'everything', url: everything.url, prefix: 'ev_', tools: { include: ['echo', 'get-sum'] } },
        { name: 'workflow', url: recorder.url, prefix: 'wf_', headers: { 'X-User': '{principal.subject}', 'X-User-Email': '{principal.email}' } },
      ],
    },
  ];
  worker = await startOAuthWorker({ config });
});
after(async () => {
  await worker?.close();
  await everything?.close();
  await recorder?.close();
});

test('alice signs in through mcp-edge and calls the upstream servers\' tools; the workflow hears who she is', async () => {
  const provider = new MemoryOAuthProvider({ redirectUrl: 'http://127.0.0.1:9/callback', clientName: 'Connector', authorize: (url) => signInByForm(url, { username: 'alice', password: PASSWORDS.ALICE_PASSWORD }) });
  await assert.rejects(new Client({ name: 'connector', version: '1' }).connect(new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider })), UnauthorizedError);
  await new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider }).finishAuth(provider.callback.code);
  const client = new Client({ name: 'connector', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(worker.mcpUrl, { authProvider: provider }));
  try {
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['ev_echo', 'ev_get-sum', 'wf_work']);
    const sum = await client.callTool({ name: 'ev_get-sum', arguments: { a: 2, b: 40 } });
    assert.match(JSON.stringify(sum.content), /42/);
    const done = await client.callTool({ name: 'wf_work', arguments: { order: 1 } });
    assert.deepEqual(done.content, [{ type: 'text', text: 'done' }]);
    const call = recorder.received.find((m) => m.method === 'tools/call' && m.params?.arguments?.order === 1);
    assert.equal(call.headers['x-user'], 'alice');
    assert.equal(call.headers['x-user-email'], 'alice@example.com');
    const token = provider.tokens().access_token;
    assert.ok(recorder.received.every((m) => !JSON.stringify(m.headers).includes(token) && !m.headers.authorization), 'no token of the client went upstream');
  } finally {
    await client.close();
  }
  // Without signing in, nothing: the upstream's tools are behind mcp-edge's sign-in.
  const bare = await fetch(worker.mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
  assert.equal(bare.status, 401);
});
