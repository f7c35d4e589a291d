// n8n's own MCP Server Trigger behind mcp-edge, as docs/upstreams.md's "Fronting n8n's MCP
// Server Trigger" sets it up: the McpTrigger node and McpServer of @n8n/n8n-nodes-langchain
// 2.41.1, served as n8n serves them (tests/e2e/n8n_trigger.cjs), a trigger of version 2.1 over
// Streamable HTTP and one of version 1.1 over the legacy HTTP+SSE transport, both behind Bearer
// auth. The official SDK client, through mcp-edge (signed in with a static token): the
// workflow's tools listed under the prefix; a call; the caller's identity reaching the workflow's
// tools as n8n hands them the request, and the client's own token never reaching n8n; the
// legacy trigger listed and called; n8n restarted mid-session (it forgets its sessions) and the
// next call still working.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TOKENS, root, startMiniflare } from './harness.mjs';
import { n8nTrigger } from './clients.mjs';
import { freePort } from './mcp_servers.mjs';

const N8N_TOKEN = 'n8n-trigger-token-6d2f';
// n8n gives a trigger a UUID as its path.
const N8N_PATH = '3f6c2a9e-5b1d-4e7a-9c08-d2b4f1e6a731';
const N8N_V1_PATH = '8a0e4c17-2f9b-4d63-a5e1-7c3b9d0f2e48';
const V2 = `/mcp/${N8N_PATH}`;
const V1 = `/mcp/${N8N_V1_PATH}`;

/** The trigger on `port`, its events pushed to `events`; resolves once it listens. */
async function startTrigger(port, events) {
  const child = spawn(process.execPath, [join(root, 'tests', 'e2e', 'n8n_trigger.cjs'), n8nTrigger(), String(port), N8N_TOKEN, N8N_PATH, N8N_V1_PATH], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  let rest = '';
  const listening = new Promise((resolve) => {
    child.stdout.on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) {
        const event = JSON.parse(line);
        if (event.event === 'listening') resolve(true);
        else events.push(event);
      }
    });
  });
  if (!(await Promise.race([listening, exited.then(() => false)]))) throw new Error(`n8n's trigger did not start: ${stderr}`);
  return { close: async () => { child.kill(); await exited; } };
}

let port;
let trigger;
const events = [];
let worker;
before(async () => {
  port = await freePort();
  trigger = await startTrigger(port, events);
  const headers = { Authorization: 'Bearer {env.N8N_MCP_TOKEN}', 'X-User': '{principal.subject}' };
  const config = {
    servers: [
      {
        route: '/mcp',
        name: 'workflows',
        version: '1',
        privateUpstreams: ['127.0.0.1', 'localhost'],
        auth: { tokens: [{ secret: 'BOT_TOKEN', subject: 'bot', roles: ['staff'] }] },
        upstreams: [
          { name: 'n8n', url: `http://127.0.0.1:${port}/mcp/{env.N8N_MCP_PATH}`, headers, prefix: 'n8n_' },
          { name: 'n8n-v1', url: `http://127.0.0.1:${port}/mcp/{env.N8N_MCP_V1_PATH}/sse`, transport: 'sse', headers, prefix: 'n8nv1_' },
        ],
      },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-n8n-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), bindings: { N8N_MCP_TOKEN: N8N_TOKEN, N8N_MCP_PATH: N8N_PATH, N8N_MCP_V1_PATH: N8N_V1_PATH } });
});
after(async () => {
  await worker?.mf.dispose();
  await trigger?.close();
});

async function connect() {
  const client = new Client({ name: 'through-mcp-edge', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', worker.url), { requestInit: { headers: { Authorization: `Bearer ${TOKENS.BOT_TOKEN}` } } });
  await client.connect(transport);
  return client;
}

/** The requests the trigger answered at `path`, with JSON-RPC `method` when given. */
const requests = (path, method) => events.filter((e) => e.event === 'request' && e.path.startsWith(path) && (!method || e.body?.method === method));

/** Waits until the harness has reported `count` events that `pick` returns: it prints each
 *  request as it answers it, so the report may reach us just after the answer did. */
async function reported(pick, count) {
  for (let i = 0; i < 150 && pick().length < count; i++) await new Promise((r) => setTimeout(r, 20));
  return pick();
}

test('n8n\'s trigger asks for its own Bearer token: without it, 403 from the Webhook node\'s check', async () => {
  const res = await fetch(`http://127.0.0.1:${port}${V2}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKENS.BOT_TOKEN}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  });
  assert.equal(res.status, 403);
  assert.equal(await res.text(), 'Authorization data is wrong!');
});

test('the workflow\'s tools are listed under the prefix, with the schemas n8n gives them', async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['n8n_add', 'n8n_whoami', 'n8nv1_add', 'n8nv1_whoami']);
    const add = tools.find((t) => t.name === 'n8n_add');
    assert.equal(add.description, 'Adds two numbers');
    assert.deepEqual(add.inputSchema.properties, { a: { type: 'number', description: 'The first number' }, b: { type: 'number', description: 'The second number' } });
    assert.deepEqual(add.inputSchema.required, ['a', 'b']);
    // Read once, as no one (the deployment's credential, and no caller), in a session of its
    // own that mcp-edge then ends.
    const listed = await reported(() => requests(V2, 'tools/list'), 1);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].status, 200);
    assert.equal(listed[0].headers.authorization, `Bearer ${N8N_TOKEN}`);
    assert.ok(!listed[0].headers['x-user'], `no caller when listing: ${JSON.stringify(listed[0].headers)}`);
    const ended = await reported(() => requests(V2).filter((e) => e.method === 'DELETE'), 1);
    assert.deepEqual(ended.map((e) => [e.headers['mcp-session-id'], e.status]), [[listed[0].headers['mcp-session-id'], 200]]);
    assert.equal((await reported(() => requests(`${V1}/messages`, 'tools/list'), 1)).length, 1);
  } finally {
    await client.close();
  }
});

test('a call runs the workflow\'s tool in n8n and answers with its result; the client\'s session ends n8n\'s', async () => {
  const client = await connect();
  try {
    const sum = await client.callTool({ name: 'n8n_add', arguments: { a: 2, b: 3 } });
    assert.deepEqual(sum.content, [{ type: 'text', text: '5' }]);
    assert.ok(!sum.isError);
    const [called] = await reported(() => requests(V2, 'tools/call').filter((e) => e.body.params.arguments?.a === 2), 1);
    const upstreamSession = called.headers['mcp-session-id'];
    // The client ends its session (DELETE): mcp-edge ends the one it kept in n8n, which n8n
    // would otherwise hold in memory until its idle sweep.
    await client.transport.terminateSession();
    const [ended] = await reported(() => requests(V2).filter((e) => e.method === 'DELETE' && e.headers['mcp-session-id'] === upstreamSession), 1);
    assert.equal(ended.status, 200);
    const ran = events.filter((e) => e.event === 'tool' && e.name === 'add' && e.args.a === 2);
    assert.deepEqual(ran.map((e) => [e.node, e.args]), [['MCP Server Trigger', { a: 2, b: 3 }]]);
    // The execution n8n starts for the call.
    const execution = events.find((e) => e.event === 'execution' && e.json.mcpToolCall?.arguments?.a === 2);
    assert.deepEqual(execution.json.mcpToolCall, { toolName: 'add', arguments: { a: 2, b: 3 }, sourceNodeName: 'add' });
  } finally {
    await client.close();
  }
});

test('the caller reaches the workflow\'s tools as X-User, and the client\'s own token never reaches n8n', async () => {
  const client = await connect();
  try {
    // Without arguments, which n8n refuses ("Require a name and arguments for the tool call"):
    // mcp-edge sends `{}`.
    const me = await client.callTool({ name: 'n8n_whoami' });
    assert.deepEqual(me.content, [{ type: 'text', text: 'bot' }]);
    // The request n8n handed the tool: the caller, and n8n's own credential hidden by n8n.
    const ran = events.filter((e) => e.event === 'tool' && e.name === 'whoami' && e.node === 'MCP Server Trigger');
    assert.equal(ran.length, 1);
    assert.equal(ran[0].headers['x-user'], 'bot');
    assert.equal(ran[0].headers.authorization, '**hidden**');
    const execution = events.find((e) => e.event === 'execution' && e.json.mcpToolCall?.toolName === 'whoami');
    assert.equal(execution.json.headers['x-user'], 'bot');
    const [call] = await reported(() => requests(V2, 'tools/call').filter((e) => e.body.params.name === 'whoami'), 1);
    assert.deepEqual(call.body.params, { name: 'whoami', arguments: {} });
    assert.equal(call.headers.authorization, `Bearer ${N8N_TOKEN}`);
    assert.equal(call.headers['x-user'], 'bot');
    // Only the first test's own request, refused, ever carried it.
    const carried = events.filter((e) => JSON.stringify(e).includes(TOKENS.BOT_TOKEN));
    assert.deepEqual(carried.map((e) => [e.event, e.status, e.body.method]), [['request', 403, 'initialize']]);
  } finally {
    await client.close();
  }
});

test('a trigger of version 1 over the legacy HTTP+SSE transport: listed and called', async () => {
  const client = await connect();
  try {
    const sum = await client.callTool({ name: 'n8nv1_add', arguments: { a: 4, b: 3 } });
    assert.deepEqual(sum.content, [{ type: 'text', text: '7' }]);
    // n8n gives the request to the tools of version 2.1 and later only; the caller still
    // reaches the trigger's requests.
    const me = await client.callTool({ name: 'n8nv1_whoami', arguments: {} });
    assert.deepEqual(me.content, [{ type: 'text', text: 'nobody' }]);
    const calls = await reported(() => requests(`${V1}/messages`, 'tools/call'), 2);
    assert.deepEqual(calls.map((e) => [e.body.params.name, e.status, e.headers.authorization, e.headers['x-user']]), [
      ['add', 202, `Bearer ${N8N_TOKEN}`, 'bot'],
      ['whoami', 202, `Bearer ${N8N_TOKEN}`, 'bot'],
    ]);
    for (const call of calls) assert.match(call.query.sessionId, /^[0-9a-f-]{36}$/);
    const streams = requests(`${V1}/sse`);
    assert.ok(streams.every((e) => e.method === 'GET' && e.status === 200 && e.headers.authorization === `Bearer ${N8N_TOKEN}`), JSON.stringify(streams));
  } finally {
    await client.close();
  }
});

test('n8n restarts mid-session and forgets its sessions: the next call opens a new one and works', async () => {
  const client = await connect();
  try {
    assert.deepEqual((await client.callTool({ name: 'n8n_add', arguments: { a: 10, b: 1 } })).content, [{ type: 'text', text: '11' }]);
    const [first] = await reported(() => requests(V2, 'tools/call').filter((e) => e.body.params.arguments?.a === 10 && e.body.params.arguments?.b === 1), 1);
    const before = first.headers['mcp-session-id'];
    assert.match(before, /^[0-9a-f-]{36}$/);
    await trigger.close();
    const restartedAt = events.length;
    trigger = await startTrigger(port, events);
    assert.deepEqual((await client.callTool({ name: 'n8n_add', arguments: { a: 10, b: 2 } })).content, [{ type: 'text', text: '12' }]);
    const after = await reported(() => events.slice(restartedAt).filter((e) => e.event === 'request'), 4);
    assert.deepEqual(after.map((e) => [e.method, e.body.method ?? null, e.status, e.headers['mcp-session-id'] === before ? 'old session' : e.headers['mcp-session-id'] ? 'new session' : 'no session']), [
      ['POST', 'tools/call', 404, 'old session'],
      ['POST', 'initialize', 200, 'no session'],
      ['POST', 'notifications/initialized', 202, 'new session'],
      ['POST', 'tools/call', 200, 'new session'],
    ]);
    // All n8n had to say in the whole run: that it did not know the old session.
    assert.deepEqual(events.filter((e) => e.event === 'log').map((e) => [e.level, e.message]), [['warn', `Rejecting recreate request for invalid session: ${before}`]]);
  } finally {
    await client.close();
  }
});
