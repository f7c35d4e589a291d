// Streams through the proxy: an upstream MCP server's list changes and resource updates reach
// mcp-edge's clients. The upstream is the official TypeScript SDK's McpServer over its
// Streamable HTTP transport (one McpServer per session, sharing one set of tools and notes), with
// a tool that registers another tool (and says so on the call's own stream, as FastMCP does),
// beside a FastMCP 4 server (PyPI `fastmcp`, tests/e2e/fastmcp_upstream.py) whose tool adds a tool,
// resources that can be subscribed to, and a hook of the test's own that changes a note or adds
// a tool from outside any call. Clients: a 2026-07-28 client written as raw requests
// (`subscriptions/listen`, as tests/e2e/revision.test.mjs does) and the SDK's 2025-11-25 client,
// whose GET stream carries what it subscribed to.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { isInitializeRequest, SubscribeRequestSchema, UnsubscribeRequestSchema, ToolListChangedNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import { post, root, sseEvents, startMiniflare } from './harness.mjs';
import { fastmcp } from './clients.mjs';
import { freePort } from './mcp_servers.mjs';

/** The upstream: the SDK's McpServer, a session each, on 127.0.0.1. */
async function startUpstream() {
  const sessions = new Map();
  const grown = [];
  const subscribed = new Map();
  const deleted = [];
  // Each session's GET streams open now.
  const open = new Map();
  const text = (name) => ({ content: [{ type: 'text', text: name }] });
  const addTool = (server, name) => server.registerTool(name, { description: `grown ${name}`, inputSchema: {} }, async () => text(name));
  function build(id) {
    const server = new McpServer({ name: 'sdk-upstream', version: '1.0.0' }, { capabilities: { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } } });
    server.registerTool('grow', { description: 'Adds a tool', inputSchema: { name: z.string() } }, async ({ name }, extra) => {
      grow(name);
      // On the call's own stream, before the result: what FastMCP does for a tool added in a call.
      await extra.sendNotification({ method: 'notifications/tools/list_changed' });
      return text(`grew ${name}`);
    });
    for (const uri of ['note://one', 'note://two']) server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: `${uri} now` }] }));
    server.registerResource('item', new ResourceTemplate('note://item/{id}', { list: undefined }), {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'item' }] }));
    for (const name of grown) addTool(server, name);
    server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      subscribed.get(id.value)?.add(request.params.uri);
      return {};
    });
    server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
      subscribed.get(id.value)?.delete(request.params.uri);
      return {};
    });
    return server;
  }
  function grow(name) {
    grown.push(name);
    // Every session's server gets it, and says so on its GET stream.
    for (const { server } of sessions.values()) addTool(server, name);
  }
  const http = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/hook/update') {
      const uri = url.searchParams.get('uri');
      let sent = 0;
      for (const [sid, { server }] of sessions) {
        if (subscribed.get(sid)?.has(uri)) {
          await server.server.sendResourceUpdated({ uri });
          sent += 1;
        }
      }
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sent }));
    }
    if (url.pathname === '/hook/grow') {
      grow(url.searchParams.get('name'));
      return res.writeHead(204).end();
    }
    if (url.pathname === '/hook/drop') {
      // Forgets every session, ending their streams: a restart, as the client sees it.
      for (const { transport } of [...sessions.values()]) await transport.close();
      sessions.clear();
      return res.writeHead(204).end();
    }
    const sid = req.headers['mcp-session-id'];
    let body;
    if (req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      body = JSON.parse(raw);
    }
    if (req.method === 'POST' && !sid && isInitializeRequest(body)) {
      const id = { value: undefined };
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (value) => {
          id.value = value;
          subscribed.set(value, new Set());
          sessions.set(value, { server, transport });
        },
      });
      transport.onclose = () => {
        sessions.delete(id.value);
        subscribed.delete(id.value);
      };
      const server = build(id);
      await server.connect(transport);
      return transport.handleRequest(req, res, body);
    }
    const entry = sessions.get(sid);
    if (entry && req.method === 'GET') {
      open.set(sid, (open.get(sid) ?? 0) + 1);
      res.once('close', () => open.set(sid, open.get(sid) - 1));
    }
    if (!entry) return res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
    if (req.method === 'DELETE') deleted.push(sid);
    return entry.transport.handleRequest(req, res, body);
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${http.address().port}`;
  return {
    url: `${base}/mcp`,
    deleted,
    /** How many sessions are subscribed to `uri` now, with their stream open (where its updates go). */
    subscribers: (uri) => [...subscribed].filter(([sid, s]) => s.has(uri) && open.get(sid) > 0).length,
    update: async (uri) => (await (await fetch(`${base}/hook/update?uri=${encodeURIComponent(uri)}`)).json()).sent,
    grow: (name) => fetch(`${base}/hook/grow?name=${name}`),
    drop: () => fetch(`${base}/hook/drop`),
    close: () => new Promise((resolve) => { http.closeAllConnections(); http.close(resolve); }),
  };
}

/** The FastMCP 4 server (tests/e2e/fastmcp_upstream.py) on a free port; resolves once it answers. */
async function startFastmcp() {
  const port = await freePort();
  const child = spawn(fastmcp(), [join(root, 'tests', 'e2e', 'fastmcp_upstream.py'), String(port)], { stdio: ['ignore', 'ignore', 'ignore'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let i = 0; i < 300; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'GET' }).then(() => true, () => false);
    if (up) return { url: `http://127.0.0.1:${port}/mcp`, close: async () => { child.kill(); await exited; } };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('the FastMCP server did not start');
}

let upstream;
let fast;
let worker;
let mcpUrl;
before(async () => {
  upstream = await startUpstream();
  fast = await startFastmcp();
  const config = {
    servers: [
      {
        route: '/mcp',
        name: 'gateway',
        version: '1',
        privateUpstreams: ['127.0.0.1'],
        sessions: { keepaliveMs: 1000 },
        // Read once an hour: what a client hears of changes comes from the upstream, not a timer.
        upstreams: [
          { name: 'sdk', url: upstream.url, prefix: 'up_', catalogTtlSeconds: 3600 },
          { name: 'fastmcp', url: fast.url, prefix: 'fm_', catalogTtlSeconds: 3600 },
        ],
      },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-listen-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json') });
  mcpUrl = new URL('/mcp', worker.url);
});
after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
  await fast?.close();
});

const VERSION = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': VERSION,
  'io.modelcontextprotocol/clientInfo': { name: 'listen-client', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';

/** A 2026-07-28 request, with the headers the revision requires. */
function send(method, params = {}, id = 1) {
  const name = method === 'resources/read' ? params.uri : params.name;
  const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
  return post(mcpUrl, { jsonrpc: '2.0', id, method, params: { ...params, _meta: META } }, headers);
}

/** The messages of a reply, JSON or SSE. */
async function messages(res) {
  const text = await res.text();
  if (!res.headers.get('content-type').startsWith('text/event-stream')) return [JSON.parse(text)];
  return text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
}

async function toolNames() {
  const [reply] = await messages(await send('tools/list', {}, 'list'));
  return reply.result.tools.map((t) => t.name);
}

/** A listen stream: its acknowledgement, and `next()`, the next message within a time limit. */
async function listen(id, notifications) {
  const controller = new AbortController();
  const res = await fetch(mcpUrl, {
    method: 'POST',
    signal: controller.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': 'subscriptions/listen' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: META } }),
  });
  assert.equal(res.status, 200);
  const events = sseEvents(res);
  const next = async (ms = 10_000) => {
    const timer = new Promise((resolve) => setTimeout(() => resolve({ timeout: true }), ms));
    const event = await Promise.race([events.next(), timer]);
    return event.timeout ? undefined : JSON.parse(event.value.data);
  };
  const ack = await next();
  return { ack, next, leave: () => controller.abort() };
}

async function until(what, check, ms = 15_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const updated = (uri, id) => ({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri, _meta: { [SUBSCRIPTION]: id } } });

test('a 2026-07-28 listen stream: acknowledged as it will be served, then the upstream\'s resource updates and list changes, tagged', async () => {
  assert.ok((await toolNames()).includes('up_grow'));
  const stream = await listen('fan-1', { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['note://one', 'note://item/7', 'file:///of-no-upstream'] });
  // A URI that no upstream (and not the server) owns is not promised; list changes are.
  assert.deepEqual(stream.ack, {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['note://one', 'note://item/7'] }, _meta: { [SUBSCRIPTION]: 'fan-1' } },
  });
  try {
    // mcp-edge subscribed upstream, in a session it holds for the stream.
    await until('the upstream subscription', () => upstream.subscribers('note://one') === 1 && upstream.subscribers('note://item/7') === 1);
    assert.equal(await upstream.update('note://one'), 1);
    assert.deepEqual(await stream.next(), updated('note://one', 'fan-1'));
    assert.equal(await upstream.update('note://two'), 0, 'not listened to: not subscribed upstream');
    assert.equal(await upstream.update('note://item/7'), 1);
    assert.deepEqual(await stream.next(), updated('note://item/7', 'fan-1'));
    // A tool added outside any call: the upstream says so on its own stream only.
    await upstream.grow('beta');
    assert.deepEqual(await stream.next(), { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUBSCRIPTION]: 'fan-1' } } });
    assert.ok((await toolNames()).includes('up_beta'), 'a tools/list after the notification lists the new tool');
  } finally {
    stream.leave();
  }
  // The client left: the upstream session held for it ends, and its subscriptions with it.
  await until('the upstream subscription to end', () => upstream.subscribers('note://one') === 0);
});

test('an upstream that drops its stream (a restart): mcp-edge subscribes again, and updates still arrive', async () => {
  const stream = await listen('fan-2', { resourceSubscriptions: ['note://two'] });
  try {
    await until('the upstream subscription', () => upstream.subscribers('note://two') === 1);
    await upstream.drop();
    assert.equal(upstream.subscribers('note://two'), 0);
    await until('a new upstream subscription', () => upstream.subscribers('note://two') === 1);
    assert.equal(await upstream.update('note://two'), 1);
    assert.deepEqual(await stream.next(), updated('note://two', 'fan-2'));
  } finally {
    stream.leave();
  }
  await until('the upstream subscription to end', () => upstream.subscribers('note://two') === 0);
});

test('many listeners of one URI: each is told once; as they leave, their upstream sessions end', async () => {
  const streams = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => listen(`many-${n}`, { resourceSubscriptions: ['note://item/42'] })));
  const deletedBefore = upstream.deleted.length;
  try {
    await until('six upstream subscriptions', () => upstream.subscribers('note://item/42') === 6);
    assert.equal(await upstream.update('note://item/42'), 6);
    const got = await Promise.all(streams.map((s) => s.next()));
    assert.deepEqual(got, streams.map((_, i) => updated('note://item/42', `many-${i + 1}`)));
  } finally {
    for (const s of streams) s.leave();
  }
  await until('every upstream subscription to end', () => upstream.subscribers('note://item/42') === 0);
  assert.ok(upstream.deleted.length - deletedBefore >= 6, 'each upstream session ended with a DELETE');
});

test('a list change an upstream announces during a call: passed on the call\'s stream, and the next tools/list shows the new tool', async () => {
  // A 2025-11-25 client (the SDK's): told before the call's result, and listing the new tool at once.
  const client = new Client({ name: 'sdk-client', version: '1' });
  const transport = new StreamableHTTPClientTransport(mcpUrl);
  await client.connect(transport);
  let told = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { told += 1; });
  try {
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'up_gamma'));
    const result = await client.callTool({ name: 'up_grow', arguments: { name: 'gamma' } });
    assert.deepEqual(result.content, [{ type: 'text', text: 'grew gamma' }]);
    assert.ok(told >= 1, 'told before the result');
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'up_gamma'), 'the list right after the result is the new one');
  } finally {
    await client.close();
  }
  // A 2026-07-28 client: the notification on the call's stream before its result, then the new list.
  // A progress token: the reply is a stream (without one, a 2026-07-28 call is answered with one
  // JSON body, which has no room for the notification; the list is read again all the same).
  const call = { jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'up_grow', arguments: { name: 'delta' }, _meta: { ...META, progressToken: 'p1' } } };
  const replies = await messages(await post(mcpUrl, call, { accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': 'tools/call', 'mcp-name': 'up_grow' }));
  const at = replies.findIndex((m) => m.method === 'notifications/tools/list_changed');
  const answered = replies.findIndex((m) => m.id === 'call');
  assert.ok(at >= 0 && at < answered, JSON.stringify(replies));
  assert.deepEqual(replies[answered].result.content, [{ type: 'text', text: 'grew delta' }]);
  assert.ok((await toolNames()).includes('up_delta'));
});

test('FastMCP 4, a tool that adds a tool: the client is told on the call\'s stream, and lists the new tool straight after the result', async () => {
  const client = new Client({ name: 'sdk-client', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl));
  let told = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { told += 1; });
  try {
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'fm_epsilon'));
    const result = await client.callTool({ name: 'fm_grow', arguments: { name: 'epsilon' } });
    assert.equal(result.content[0].text, 'grew epsilon');
    assert.ok(told >= 1, 'told before the result');
    const listed = (await client.listTools()).tools;
    assert.ok(listed.some((t) => t.name === 'fm_epsilon'), listed.map((t) => t.name).join());
    assert.deepEqual((await client.callTool({ name: 'fm_epsilon', arguments: {} })).content, [{ type: 'text', text: 'epsilon' }]);
  } finally {
    await client.close();
  }
});

test('a 2025-11-25 client\'s GET stream carries the updates of an upstream resource it subscribed to', async () => {
  const client = new Client({ name: 'sdk-client', version: '1' });
  const transport = new StreamableHTTPClientTransport(mcpUrl);
  await client.connect(transport);
  const heard = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { heard.push(n.params.uri); });
  try {
    await client.subscribeResource({ uri: 'note://one' });
    await until('the upstream subscription', () => upstream.subscribers('note://one') === 1).catch((e) => { console.log(worker.logs.join('\n')); throw e; });
    assert.equal(await upstream.update('note://one'), 1);
    await until('the update', () => heard.length === 1);
    assert.deepEqual(heard, ['note://one']);
    // Unsubscribed: the stream's watch follows, and the upstream subscription ends.
    await client.unsubscribeResource({ uri: 'note://one' });
    await until('the upstream subscription to end', () => upstream.subscribers('note://one') === 0);
  } finally {
    await client.close();
  }
});
