// Tasks belong to their principal (issue 24's abuse cases): on a server with bearer tokens, a
// principal's tasks are counted across its sessions (`tasks.maxPerPrincipal`), and another
// principal can neither see nor cancel them, by 2025-11-25 session nor through the 2026-07-28
// Tasks extension, where the task id alone names the task.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { TOKENS, startMiniflare } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';

const EXTENSION = 'io.modelcontextprotocol/tasks';

let upstream;
let worker;
before(async () => {
  upstream = await startTestUpstream();
  const config = {
    servers: [
      {
        route: '/mcp',
        name: 'tasks-by-principal',
        version: '1',
        privateUpstreams: ['127.0.0.1', 'localhost'],
        auth: { tokens: [{ secret: 'BOT_TOKEN', subject: 'bot' }, { secret: 'VISITOR_TOKEN', subject: 'visitor' }, { secret: 'ADMIN_KEY', subject: 'admin' }] },
        tasks: { maxPerPrincipal: 2, maxTotalResultBytes: 1024 },
        tools: [{ name: 'job', inputSchema: { type: 'object', properties: { key: { type: 'string' } } }, execution: 'callback', http: { url: '{+env.UPSTREAM_URL}/jobs/{key}' } }],
      },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-tasks-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url });
});
after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
});

async function connect(token) {
  const client = new Client({ name: 'tasks-principal', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', worker.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

const start = (client, key) => client.request({ method: 'tools/call', params: { name: 'job', arguments: { key }, task: {} } }, CreateTaskResultSchema);

test('a principal\'s tasks count across its sessions; another principal has its own count', async () => {
  const [first, second, visitor] = [await connect(TOKENS.BOT_TOKEN), await connect(TOKENS.BOT_TOKEN), await connect(TOKENS.VISITOR_TOKEN)];
  try {
    await start(first, 'p1');
    await start(second, 'p2');
    await assert.rejects(start(second, 'p3'), /at most 2 tasks may be kept per principal/);
    await assert.rejects(start(first, 'p4'), /at most 2 tasks may be kept per principal/);
    const visitors = await start(visitor, 'v1');
    assert.equal(visitors.task.status, 'working');
  } finally {
    await Promise.all([first.close(), second.close(), visitor.close()]);
  }
});

test('the results a principal\'s tasks keep are bounded in all: one that would pass the bound fails its task and says so', async () => {
  const [first, second] = [await connect(TOKENS.ADMIN_KEY), await connect(TOKENS.ADMIN_KEY)];
  try {
    const kept = await start(first, 'big-1');
    const refused = await start(second, 'big-2');
    const post = async (key) => {
      for (let i = 0; i < 200 && !upstream.jobs.get(key); i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal((await fetch(upstream.jobs.get(key), { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(600) })).status, 200);
    };
    await post('big-1');
    await post('big-2');
    const wait = async (client, id) => {
      for (let i = 0; i < 100; i++) {
        const task = await client.experimental.tasks.getTask(id);
        if (task.status !== 'working') return task;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('the task did not end');
    };
    assert.equal((await wait(first, kept.task.taskId)).status, 'completed');
    assert.equal((await wait(second, refused.task.taskId)).status, 'failed');
    const result = await second.experimental.tasks.getTaskResult(refused.task.taskId, CallToolResultSchema);
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /would pass the 1024 bytes this principal's tasks may keep in all/);
  } finally {
    await Promise.all([first.close(), second.close()]);
  }
});

/** A 2026-07-28 request, as the revision has clients send one. */
async function revision(token, method, params, name) {
  const capabilities = { extensions: { [EXTENSION]: {} } };
  const body = { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': capabilities } } };
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) };
  const res = await fetch(new URL('/mcp', worker.url), { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

test('2026-07-28: a task id names the task for its principal only', async () => {
  const created = await revision(TOKENS.VISITOR_TOKEN, 'tools/call', { name: 'job', arguments: { key: 'r1' } }, 'job');
  assert.equal(created.body.result.resultType, 'task');
  const id = created.body.result.taskId;
  const mine = await revision(TOKENS.VISITOR_TOKEN, 'tasks/get', { taskId: id }, id);
  assert.equal(mine.body.result.status, 'working');
  const theirs = await revision(TOKENS.BOT_TOKEN, 'tasks/get', { taskId: id }, id);
  assert.equal(theirs.status, 400);
  assert.equal(theirs.body.error.code, -32602);
  // A cancel from another principal changes nothing.
  await revision(TOKENS.BOT_TOKEN, 'tasks/cancel', { taskId: id }, id);
  assert.equal((await revision(TOKENS.VISITOR_TOKEN, 'tasks/get', { taskId: id }, id)).body.result.status, 'working');
  // The workflow answers; its principal reads the result, inlined.
  for (let i = 0; i < 200 && !upstream.jobs.get('r1'); i++) await new Promise((r) => setTimeout(r, 20));
  const url = upstream.jobs.get('r1');
  assert.equal((await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'for the visitor' })).status, 200);
  const done = await revision(TOKENS.VISITOR_TOKEN, 'tasks/get', { taskId: id }, id);
  assert.equal(done.body.result.status, 'completed');
  assert.deepEqual(done.body.result.result.content, [{ type: 'text', text: 'for the visitor' }]);
});
