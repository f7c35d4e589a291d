// Tasks through the proxy (issue 43): an upstream MCP server's tools keep their
// execution.taskSupport, a 2026-07-28 client's task-augmented call (the Tasks extension) is run
// as a task by the upstream, and the task id the client sees is namespaced per upstream and
// signed for its principal; tasks/get, tasks/update and tasks/cancel go to that upstream with its
// own id. Real parts: an HTTP service on 127.0.0.1 that answers slowly, a first mcp-edge whose two
// servers run it as task-capable tools (the upstreams `a` and `b`), and a second mcp-edge, with
// bearer tokens, in front of both. A 2025-11-25 session's task of the same tool is the proxy's own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TOKENS, post, root, startMiniflare } from './harness.mjs';

const VERSION = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const LOOPBACK = ['127.0.0.1', 'localhost'];
const BOT = { authorization: `Bearer ${TOKENS.BOT_TOKEN}` };
const VISITOR = { authorization: `Bearer ${TOKENS.VISITOR_TOKEN}` };

let service;
let front;
let proxy;

/** The slow service: answers what it was sent after `ms` of its query. */
async function startService() {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const ms = Number(new URL(req.url, 'http://x').searchParams.get('ms') ?? 0);
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ worked: JSON.parse(body || '{}'), at: req.url })), ms);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

// The release build: nothing here needs the test hooks.
const dir = join(root, 'build');

function configFile(config) {
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-tasks-proxy-')), 'mcp-edge.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

before(async () => {
  service = await startService();
  const server = (route, name) => ({
    route,
    name,
    version: '1',
    privateUpstreams: LOOPBACK,
    tools: [
      { name: 'work', taskSupport: 'optional', http: { method: 'POST', url: `${service.url}/${name}?ms=400` } },
      { name: 'quick', http: { method: 'POST', url: `${service.url}/${name}/quick` } },
    ],
  });
  front = await startMiniflare({ dir, config: configFile({ servers: [server('/a/mcp', 'a'), server('/b/mcp', 'b')] }) });
  proxy = await startMiniflare({
    dir,
    bindings: { CALLBACK_SIGNING_KEY: 'tasks-proxy-signing-key-7d41-9e2b0c' },
    config: configFile({
      servers: [
        {
          route: '/mcp',
          name: 'proxy',
          version: '1',
          privateUpstreams: LOOPBACK,
          auth: { tokens: [{ secret: 'BOT_TOKEN', subject: 'bot' }, { secret: 'VISITOR_TOKEN', subject: 'visitor' }] },
          upstreams: [
            { name: 'a', url: new URL('/a/mcp', front.url).href, prefix: 'a_' },
            { name: 'b', url: new URL('/b/mcp', front.url).href, prefix: 'b_' },
          ],
        },
      ],
    }),
  });
});
after(async () => {
  await proxy?.mf.dispose();
  await front?.mf.dispose();
  await service?.close();
});

/** A 2026-07-28 request to the proxy, with the headers the revision requires. */
async function send(method, params, { extension = true, headers = BOT } = {}) {
  const name = params.taskId ?? params.name;
  const capabilities = extension ? { extensions: { [TASKS]: {} } } : {};
  const meta = { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientInfo': { name: 'tasks-proxy-test', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': capabilities };
  const res = await post(new URL('/mcp', proxy.url), { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }, { accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}), ...headers });
  return res.json();
}

/** Polls tasks/get until the task has ended. */
async function ended(taskId, headers = BOT) {
  for (let i = 0; i < 100; i++) {
    const got = await send('tasks/get', { taskId }, { headers });
    if (!['working', 'input_required'].includes(got.result?.status)) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the task did not end');
}

test('an upstream\'s tools keep their taskSupport, and the proxy declares the Tasks extension', async () => {
  const listed = await send('tools/list', {});
  const work = listed.result.tools.find((t) => t.name === 'a_work');
  assert.deepEqual(work.execution, { taskSupport: 'optional' }, JSON.stringify(work));
  assert.equal(listed.result.tools.find((t) => t.name === 'a_quick').execution, undefined);
  const discovered = await send('server/discover', {});
  assert.ok(discovered.result.capabilities.extensions?.[TASKS], JSON.stringify(discovered.result.capabilities));
});

test('a task-augmented call runs as the upstream\'s task, under an id namespaced by its upstream', async () => {
  const created = await send('tools/call', { name: 'a_work', arguments: { n: 1 } });
  assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
  assert.equal(created.result.status, 'working');
  const { taskId } = created.result;
  assert.match(taskId, /^a\.[^.]+.*\.[0-9a-f]{64}$/, taskId);
  const got = await ended(taskId);
  assert.equal(got.result.status, 'completed', JSON.stringify(got));
  assert.equal(got.result.taskId, taskId, 'the id the client knows, not the upstream\'s');
  assert.equal(got.result.resultType, 'complete');
  assert.deepEqual(JSON.parse(got.result.result.content[0].text), { worked: { n: 1 }, at: '/a?ms=400' });
  // Cancelling one that has ended is acknowledged, as the extension has it.
  const cancelled = await send('tasks/cancel', { taskId });
  assert.ok(cancelled.result && !cancelled.error, JSON.stringify(cancelled));
  // A client without the extension gets the plain result.
  const plain = await send('tools/call', { name: 'b_work', arguments: { n: 2 } }, { extension: false });
  assert.deepEqual(JSON.parse(plain.result.content[0].text), { worked: { n: 2 }, at: '/b?ms=400' });
});

test('a running upstream task is cancelled there', async () => {
  const created = await send('tools/call', { name: 'b_work', arguments: { n: 3 } });
  const { taskId } = created.result;
  assert.match(taskId, /^b\./);
  const cancelled = await send('tasks/cancel', { taskId });
  assert.ok(cancelled.result && !cancelled.error, JSON.stringify(cancelled));
  const got = await send('tasks/get', { taskId });
  assert.equal(got.result.status, 'cancelled', JSON.stringify(got));
});

test('abuse: another principal\'s task, a forged namespace, another upstream\'s, the upstream\'s own id and an unknown one are not found', async () => {
  const created = await send('tools/call', { name: 'a_work', arguments: { n: 4 } });
  const { taskId } = created.result;
  const [, theirs, mac] = taskId.match(/^a\.(.+)\.([0-9a-f]{64})$/);
  const notFound = async (why, id, headers = BOT) => {
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const res = await send(method, { taskId: id }, { headers });
      assert.equal(res.error?.code, -32602, `${why} (${method}): ${JSON.stringify(res)}`);
      assert.match(res.error.message, /Task not found/, why);
    }
  };
  await notFound('another principal', taskId, VISITOR);
  await notFound('a forged namespace', `b.${theirs}.${mac}`);
  await notFound('an altered signature', `a.${theirs}.${mac.replace(/^./, (c) => (c === '0' ? '1' : '0'))}`);
  await notFound('the upstream\'s own id', theirs);
  await notFound('an unknown id', 'a.00000000000000000000000000000000.' + '0'.repeat(64));
  // Another upstream's task id, under this one's name: b's own task, renamed.
  const other = await send('tools/call', { name: 'b_work', arguments: { n: 5 } });
  const [, bTheirs, bMac] = other.result.taskId.match(/^b\.(.+)\.([0-9a-f]{64})$/);
  await notFound('another upstream\'s', `a.${bTheirs}.${bMac}`);
  // None of it touched the task: its principal still reaches it, to its end.
  const got = await ended(taskId);
  assert.equal(got.result.status, 'completed', JSON.stringify(got));
});

test('a 2025-11-25 session\'s task of an upstream\'s tool is one of the proxy\'s own', async () => {
  const url = new URL('/mcp', proxy.url);
  const rpc = async (body, headers = {}) => {
    const res = await post(url, { jsonrpc: '2.0', ...body }, { ...BOT, ...headers });
    return { res, body: res.status === 202 ? null : await res.json() };
  };
  const init = await rpc({ id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'tasks-proxy-test', version: '1' } } });
  assert.deepEqual(init.body.result.capabilities.tasks?.requests, { tools: { call: {} } }, JSON.stringify(init.body.result.capabilities));
  const session = { 'mcp-session-id': init.res.headers.get('mcp-session-id'), 'mcp-protocol-version': '2025-11-25' };
  await rpc({ method: 'notifications/initialized' }, session);
  const created = await rpc({ id: 2, method: 'tools/call', params: { name: 'a_work', arguments: { n: 6 }, task: { ttl: 60000 } } }, session);
  const { taskId } = created.body.result.task;
  assert.doesNotMatch(taskId, /^a\./, 'an id of the proxy\'s own');
  const result = await rpc({ id: 3, method: 'tasks/result', params: { taskId } }, session);
  assert.deepEqual(JSON.parse(result.body.result.content[0].text), { worked: { n: 6 }, at: '/a?ms=400' }, JSON.stringify(result.body));
});
