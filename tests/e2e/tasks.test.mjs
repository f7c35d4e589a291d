// MCP Tasks (2025-11-25) end to end, with the official TypeScript SDK's task API
// (`client.experimental.tasks`): a callback tool run as a task, its client gone and the runtime
// restarted before the upstream posts its result, which the client then fetches exactly once; the
// same for a queued tool; a direct tool cancelled mid-task (its upstream fetch aborted); the
// rules of `execution.taskSupport`; tasks scoped to their session; the limits.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startMiniflare, freshPersistDir, sseEvents } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';

const RELATED = 'io.modelcontextprotocol/related-task';

let upstream;
let worker;
let persist;
before(async () => {
  upstream = await startTestUpstream();
  persist = freshPersistDir();
  worker = await startMiniflare({ upstreamUrl: upstream.url, persist });
});
after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
});

async function connect(sessionId, capabilities = {}) {
  const client = new Client({ name: 'tasks-test', version: '1' }, { capabilities, defaultTaskPollInterval: 100 });
  const transport = new StreamableHTTPClientTransport(new URL('/tools/mcp', worker.url), sessionId ? { sessionId } : {});
  await client.connect(transport);
  return { client, transport };
}

async function waitFor(check, what) {
  for (let i = 0; i < 500; i++) {
    const value = check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Starts a task the low-level way: the `CreateTaskResult`'s task. */
async function startTask(client, name, args, ttl = 60_000) {
  const created = await client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl } } }, CreateTaskResultSchema);
  return created.task;
}

test('the server offers tasks, and its tools say how they run', async () => {
  const { client } = await connect();
  try {
    assert.deepEqual(client.getServerCapabilities().tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const support = (name) => tools.find((t) => t.name === name).execution?.taskSupport;
    assert.equal(support('callback_job'), 'optional', 'callback tools default to optional');
    assert.equal(support('queued_echo'), 'optional', 'queued tools default to optional');
    assert.equal(support('callback_task'), 'required');
    assert.equal(support('task_hang'), 'optional');
    assert.equal(support('hang'), undefined, 'a direct tool runs only as a plain call unless it says otherwise');
  } finally {
    await client.close();
  }
});

test('a callback tool as a task: the client leaves, the runtime restarts, the upstream answers, and the client gets the result once', async () => {
  let { client, transport } = await connect();
  const sessionId = transport.sessionId;
  const task = await startTask(client, 'callback_job', { key: 'task-restart' });
  assert.equal(task.status, 'working');
  assert.equal(task.ttl, 60_000);
  assert.match(task.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(typeof task.pollInterval, 'number');
  const callbackUrl = await waitFor(() => upstream.jobs.get('task-restart'), 'the upstream to get the job');
  await client.close();
  await worker.mf.dispose();
  worker = await startMiniflare({ upstreamUrl: upstream.url, persist });
  // The workflow finishes while nobody listens, and posts its result to the (moved) runtime.
  const moved = new URL(new URL(callbackUrl).pathname, worker.url);
  const applied = await fetch(moved, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"report":"done","rows":7}' });
  assert.equal(applied.status, 200);
  assert.equal((await fetch(moved, { method: 'POST', body: '{}' })).status, 410, 'a result is applied once');
  ({ client, transport } = await connect(sessionId));
  try {
    const got = await client.experimental.tasks.getTask(task.taskId);
    assert.equal(got.status, 'completed');
    assert.equal(got.taskId, task.taskId);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.deepEqual(result.structuredContent, { report: 'done', rows: 7 });
    assert.deepEqual(result._meta[RELATED], { taskId: task.taskId });
    // Fetched again, the same result; and never also delivered as a stray reply on the stream.
    assert.deepEqual((await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).structuredContent, { report: 'done', rows: 7 });
    const get = await fetch(new URL('/tools/mcp', worker.url), { headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }, signal: AbortSignal.timeout(1500) });
    const messages = [];
    await (async () => {
      for await (const event of sseEvents(get)) if (event.data) messages.push(JSON.parse(event.data));
    })().catch(() => {});
    assert.ok(messages.every((m) => !('id' in m)), `no reply on the GET stream: ${JSON.stringify(messages)}`);
  } finally {
    await client.close();
  }
});

test('the SDK\'s callToolStream: the task is created, polled, and its result arrives; a client that speaks tasks gets their status on its stream', async () => {
  // Declaring the client's own tasks capability, the SDK's GET stream is held from the start.
  const { client } = await connect(undefined, { tasks: { list: {}, cancel: {} } });
  const statuses = [];
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => statuses.push(n.params.status));
  try {
    await client.listTools();
    const seen = [];
    const stream = client.experimental.tasks.callToolStream({ name: 'callback_task', arguments: { key: 'task-stream' } }, CallToolResultSchema, { task: { ttl: 30_000 } });
    const posting = (async () => {
      const url = await waitFor(() => upstream.jobs.get('task-stream'), 'the job');
      await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'streamed through a task' });
    })();
    let result;
    for await (const message of stream) {
      seen.push(message.type);
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    await posting;
    assert.equal(seen[0], 'taskCreated');
    assert.equal(seen.at(-1), 'result');
    assert.deepEqual(result.content, [{ type: 'text', text: 'streamed through a task' }]);
    await waitFor(() => statuses.includes('completed'), 'notifications/tasks/status on the SDK\'s stream');
  } finally {
    await client.close();
  }
});

test('a session that keeps a task gets a GET stream, and there notifications/tasks/status when it ends', async () => {
  const { client, transport } = await connect();
  try {
    const task = await startTask(client, 'callback_job', { key: 'task-status' });
    const get = await fetch(new URL('/tools/mcp', worker.url), { headers: { accept: 'text/event-stream', 'mcp-session-id': transport.sessionId, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(get.status, 200);
    const statuses = [];
    const reading = (async () => {
      for await (const event of sseEvents(get)) {
        if (!event.data) continue;
        const message = JSON.parse(event.data);
        if (message.method === 'notifications/tasks/status') {
          statuses.push(message.params);
          return;
        }
      }
    })();
    const url = await waitFor(() => upstream.jobs.get('task-status'), 'the job');
    await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'done' });
    await reading;
    assert.equal(statuses[0].taskId, task.taskId);
    assert.equal(statuses[0].status, 'completed');
    assert.equal(statuses[0][RELATED], undefined);
    await get.body.cancel().catch(() => {});
  } finally {
    await client.close();
  }
});

test('a task\'s progress and log lines go on the GET stream, tied to the task; an expired task is deleted', async () => {
  const { client, transport } = await connect();
  try {
    // A session that keeps a task is offered the GET stream.
    await startTask(client, 'callback_job', { key: 'task-keeps' });
    await client.setLoggingLevel('info');
    const get = await fetch(new URL('/tools/mcp', worker.url), { headers: { accept: 'text/event-stream', 'mcp-session-id': transport.sessionId, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(get.status, 200);
    const seen = [];
    const reading = (async () => {
      for await (const event of sseEvents(get)) {
        if (!event.data) continue;
        const message = JSON.parse(event.data);
        seen.push(message);
        if (message.method === 'notifications/tasks/status' && message.params.status === 'completed') return;
      }
    })();
    const created = await client.request({ method: 'tools/call', params: { name: 'task_stream', arguments: { key: 'task-progress' }, task: { ttl: 60_000 }, _meta: { progressToken: 'tp-1' } } }, CreateTaskResultSchema);
    const id = created.task.taskId;
    await waitFor(() => seen.some((m) => m.method === 'notifications/message'), 'the log line');
    await upstream.waitForHold('task-progress');
    upstream.release('task-progress', 'streamed');
    await reading;
    await get.body.cancel().catch(() => {});
    const progress = seen.find((m) => m.method === 'notifications/progress');
    assert.deepEqual(progress.params, { progressToken: 'tp-1', progress: 1, total: 2, message: 'started', _meta: { [RELATED]: { taskId: id } } });
    const log = seen.find((m) => m.method === 'notifications/message');
    assert.deepEqual(log.params._meta, { [RELATED]: { taskId: id } });
    assert.equal(log.params.data, 'working');
    assert.deepEqual((await client.experimental.tasks.getTaskResult(id, CallToolResultSchema)).content, [{ type: 'text', text: 'streamed' }]);
  } finally {
    await client.close();
  }
  const { client: brief } = await connect();
  try {
    const short = await startTask(brief, 'callback_job', { key: 'task-brief' }, 1000);
    assert.equal(short.ttl, 1000);
    // Past its ttl the session's alarm deletes it: not listed, not found.
    await new Promise((r) => setTimeout(r, 2500));
    assert.deepEqual((await brief.experimental.tasks.listTasks()).tasks, []);
    await assert.rejects(brief.experimental.tasks.getTask(short.taskId), (e) => e.code === -32602);
  } finally {
    await brief.close();
  }
});

test('run as a task, a callback call waits as long as the task is kept, past its pendingTimeoutMs', async () => {
  const { client } = await connect();
  try {
    // callback_short gives up after 1000 ms as a plain call; as a task it waits its ttl.
    const task = await startTask(client, 'callback_short', { key: 'task-long' }, 60_000);
    const url = await waitFor(() => upstream.jobs.get('task-long'), 'the job');
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'working');
    assert.equal((await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'late but kept' })).status, 200);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.deepEqual(result.content, [{ type: 'text', text: 'late but kept' }]);
  } finally {
    await client.close();
  }
});

test('a task whose call asks the client: input_required while it waits, the request tied to the task, then the result', async () => {
  const { client } = await connect(undefined, { tasks: {}, elicitation: {} });
  const asked = [];
  let during;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    during = (await client.experimental.tasks.getTask(request.params._meta[RELATED].taskId)).status;
    return { action: 'accept', content: { name: 'Ada' } };
  });
  try {
    const task = await startTask(client, 'task_ask', { topic: 'tasks' });
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.match(result.content[0].text, /^Hello Ada \(accept\), about tasks/);
    assert.equal(asked.length, 1);
    assert.deepEqual(asked[0]._meta[RELATED], { taskId: task.taskId });
    assert.equal(during, 'input_required');
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
  } finally {
    await client.close();
  }
});

test('a queued tool as a task', async () => {
  const { client } = await connect();
  try {
    const task = await startTask(client, 'queued_echo', { message: 'queued task' });
    let got;
    for (let i = 0; i < 100; i++) {
      got = await client.experimental.tasks.getTask(task.taskId);
      if (got.status !== 'working') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(got.status, 'completed');
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.deepEqual(result.structuredContent, { message: 'queued task' });
  } finally {
    await client.close();
  }
});

test('tasks/result waits for the end; cancelling mid-task aborts the upstream fetch and the task stays cancelled', async () => {
  const { client } = await connect();
  try {
    const task = await startTask(client, 'task_hang', { key: 'task-cancel' });
    await waitFor(() => upstream.hanging.has('task-cancel'), 'the upstream to hang');
    const waiting = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema).then(() => 'result', (e) => e);
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    await waitFor(() => upstream.aborted.has('task-cancel'), 'the upstream fetch to be aborted');
    const ended = await waiting;
    assert.ok(ended instanceof Error && /cancelled/.test(ended.message), `tasks/result of a cancelled task: ${ended}`);
    assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    await assert.rejects(client.experimental.tasks.cancelTask(task.taskId), (e) => e.code === -32602 && /terminal status 'cancelled'/.test(e.message));
  } finally {
    await client.close();
  }
});

test('taskSupport is kept: a forbidden tool refuses a task and a required one a plain call (-32601); params.task is ignored before 2025-11-25', async () => {
  const { client } = await connect();
  try {
    await assert.rejects(startTask(client, 'hang', { key: 'x' }), (e) => e.code === -32601 && /does not run as a task/.test(e.message));
    await assert.rejects(client.request({ method: 'tools/call', params: { name: 'callback_task', arguments: { key: 'plain' } } }, CallToolResultSchema), (e) => e.code === -32601 && /only as a task/.test(e.message));
  } finally {
    await client.close();
  }
  // A 2025-06-18 session has no tasks: the call runs as a plain one.
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'old', version: '1' } } };
  const url = new URL('/tools/mcp', worker.url);
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const opened = await fetch(url, { method: 'POST', headers, body: JSON.stringify(init) });
  assert.equal((await opened.json()).result.capabilities.tasks, undefined);
  const sid = opened.headers.get('mcp-session-id');
  const call = await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'queued_echo', arguments: { message: 'plain' }, task: { ttl: 1000 } } }) });
  const text = await call.text();
  assert.match(text, /"structuredContent":\{"message":"plain"\}/);
  const unknown = await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tasks/list' }) });
  assert.equal((await unknown.json()).error.code, -32601);
});

test('a task belongs to its session: another finds nothing; the list pages; the ttl is bounded; the count is limited', async () => {
  const { client } = await connect();
  const { client: other } = await connect();
  try {
    const task = await startTask(client, 'callback_job', { key: 'task-mine' }, 10 ** 9);
    assert.equal(task.ttl, 600_000, 'bounded by tasks.maxTtlMs');
    await assert.rejects(other.experimental.tasks.getTask(task.taskId), (e) => e.code === -32602 && /Task not found/.test(e.message));
    await assert.rejects(other.experimental.tasks.cancelTask(task.taskId), (e) => e.code === -32602);
    assert.deepEqual((await other.experimental.tasks.listTasks()).tasks, []);
    // tasks.maxPerPrincipal is 12 on this server: eleven more fit, the thirteenth does not.
    for (let i = 0; i < 11; i++) await startTask(client, 'callback_job', { key: `task-many-${i}` });
    await assert.rejects(startTask(client, 'callback_job', { key: 'task-too-many' }), /at most 12 tasks may be kept/);
    const listed = await client.experimental.tasks.listTasks();
    assert.equal(listed.tasks.length, 12);
    assert.equal(listed.tasks[0].taskId, task.taskId, 'oldest first');
    await assert.rejects(client.experimental.tasks.listTasks('not-a-cursor'), (e) => e.code === -32602);
  } finally {
    await client.close();
    await other.close();
  }
});
