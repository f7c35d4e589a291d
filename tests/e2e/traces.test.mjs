// Traces end to end (issue 40), in workerd against the tests' own OTLP collector, which decodes
// every export with the official opentelemetry-proto definitions (tests/telemetry/): one span tree
// per call parented on the client's `traceparent`, from the HTTP header and from `params._meta`
// alike (`_meta` winning for its message), with a raw client for exact headers and the official
// SDK client; the upstream HTTP server and an upstream MCP server receiving the context of the
// client span that called them, retries and redirects as its events; a queued call, a callback
// and a task keeping their trace across the wait; the parent-based sampler; malformed
// `traceparent` values ignored; the log line naming the trace. Span names and attributes are
// OpenTelemetry's MCP, HTTP and messaging conventions as src/trace/names.rs writes them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { INIT, freshPersistDir, post, startMiniflare } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';
import { startOwn } from './mcp_servers.mjs';
import { startCollector } from '../telemetry/collector.mjs';

const LOOPBACK = ['127.0.0.1', 'localhost'];
const PROTOCOL = '2025-11-25';

/** The tools, at the test upstream's URL written out: an `{env.…}` value is a deployment secret,
 *  which `url.full` would show redacted. */
const toolsAt = (base) => [
  { name: 'echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, http: { method: 'POST', url: `${base}/echo` } },
  { name: 'queued_echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, execution: 'queued', http: { method: 'POST', url: `${base}/echo` } },
  { name: 'callback_job', inputSchema: { type: 'object', properties: { key: { type: 'string' } } }, execution: 'callback', pendingTimeoutMs: 20000, http: { url: `${base}/jobs/{key}` } },
  { name: 'flaky', inputSchema: { type: 'object', properties: { key: { type: 'string' }, fails: { type: 'integer' } } }, retry: { attempts: 3, initialDelayMs: 50, maxDelayMs: 200 }, http: { method: 'GET', url: `${base}/flap/{key}{?fails}`, timeoutMs: 5000 } },
  { name: 'redirect', inputSchema: { type: 'object', properties: { to: { type: 'string' } } }, http: { method: 'GET', url: `${base}/redirect{?to}`, maxRedirects: 2, redirectHosts: ['localhost'] } },
  { name: 'progressing', inputSchema: { type: 'object' }, http: { method: 'GET', url: `${base}/secret/raw?as=stream` } },
];

/** A worker whose traces go to `collector`, sampled at `sampleRatio`, in `encoding`. */
async function startTraced({ collector, upstream, recorder, sampleRatio, encoding }) {
  const config = {
    telemetry: { otlp: { endpoint: collector.endpoint, encoding }, traces: { sampleRatio } },
    servers: [{
      route: '/mcp',
      name: 'traced',
      version: '1',
      privateUpstreams: LOOPBACK,
      tasks: { maxTtlMs: 600000, maxPerPrincipal: 12, pollIntervalMs: 100 },
      tools: toolsAt(upstream.url),
      upstreams: [{ name: 'recorder', url: recorder.url, prefix: 'rec_' }],
    }],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-traces-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  return startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, persist: freshPersistDir() });
}

let collector;
let upstream;
let recorder;
/** Sampled at 1, exporting protobuf. */
let worker;
/** Sampled at 0, exporting OTLP/JSON: only a sampled parent brings a trace. */
let unsampled;
before(async () => {
  collector = await startCollector();
  upstream = await startTestUpstream();
  recorder = await startOwn('echo');
  worker = await startTraced({ collector, upstream, recorder, sampleRatio: 1, encoding: 'protobuf' });
  unsampled = await startTraced({ collector, upstream, recorder, sampleRatio: 0, encoding: 'json' });
});
after(async () => {
  await worker?.mf.dispose();
  await unsampled?.mf.dispose();
  await collector?.close();
  await upstream?.close();
  await recorder?.close();
});

const hex = (bytes) => randomBytes(bytes).toString('hex');
/** A fresh W3C context: its trace id, parent span id and header value. */
function context(flags = '01') {
  const traceId = hex(16);
  const parentId = hex(8);
  return { traceId, parentId, traceparent: `00-${traceId}-${parentId}-${flags}` };
}
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A session on `target`'s /mcp, opened without any trace context. */
async function session(target) {
  const url = new URL('/mcp', target.url);
  const res = await post(url, INIT);
  assert.equal(res.status, 200, await res.text());
  const sid = res.headers.get('mcp-session-id');
  assert.equal((await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid })).status, 202);
  return sid;
}

let serial = 0;
/** A tools/call with a request id of its own (a string, so its span is found by
 *  `jsonrpc.request.id`), `headers` added and `meta` as `params._meta`; its reply parsed. */
async function call(target, sid, name, args, { headers = {}, meta, task } = {}) {
  const id = `call-${++serial}-${hex(4)}`;
  const params = { name, arguments: args, ...(meta ? { _meta: meta } : {}), ...(task ? { task } : {}) };
  // With the MCP-Protocol-Version header a client sends after initialization (2025-06-18 on).
  const res = await post(new URL('/mcp', target.url), { jsonrpc: '2.0', id, method: 'tools/call', params }, { 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL, ...headers });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const body = JSON.parse(text);
  assert.equal(body.error, undefined, text);
  return { id, result: body.result, headers: res.headers };
}

const serverSpanOf = (id) => (spans) => spans.find((s) => s.kind === 'SERVER' && s.attributes['jsonrpc.request.id'] === id);
const inTrace = (spans, traceId) => spans.filter((s) => s.traceId === traceId);

/** The spans of one trace form one tree: a single root (`root`), every other span a child of a
 *  span of the trace, no span id twice. */
function assertOneTree(spans, root) {
  const ids = new Set(spans.map((s) => s.spanId));
  assert.equal(ids.size, spans.length, 'no span id twice');
  const roots = spans.filter((s) => !ids.has(s.parentSpanId));
  assert.deepEqual(roots.map((s) => s.spanId), [root.spanId], `one root, the server span: ${spans.map((s) => `${s.kind} ${s.name} ${s.spanId}<-${s.parentSpanId}`).join('; ')}`);
}

/** Whether `span` descends from `ancestor` within `spans`. */
function descends(spans, span, ancestor) {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  for (let s = span; s; s = byId.get(s.parentSpanId)) if (s.parentSpanId === ancestor.spanId) return true;
  return false;
}

/** Waits for a call's server span, and for its trace to hold spans that `complete` accepts. */
async function traceOf(id, complete = () => true) {
  return collector.waitForSpans((spans) => {
    const server = serverSpanOf(id)(spans);
    if (!server) return undefined;
    const trace = inTrace(spans, server.traceId);
    return complete(trace, server) ? { server, trace } : undefined;
  }, { what: `the trace of ${id}` });
}

/** The CLIENT span of the fetch to the test upstream (not any other client span, such as one
 *  for the hop to the session's object). */
const fetchSpans = (trace) => trace.filter((s) => s.kind === 'CLIENT' && String(s.attributes['url.full'] ?? '').startsWith(upstream.url));
const hasFetch = (trace) => fetchSpans(trace).length > 0;

/** The request the test upstream saw whose `traceparent` carries `traceId`. */
const seenIn = (traceId, path) => upstream.seen.filter((r) => r.url.startsWith(path) && TRACEPARENT.exec(r.headers.traceparent ?? '')?.[1] === traceId);

test('the HTTP traceparent header parents one span tree per call: the server span, the upstream fetch, the object\'s span where the call runs there', async () => {
  const sid = await session(worker);
  const ctx = context();
  const { id, result, headers } = await call(worker, sid, 'echo', { message: 'traced' }, { headers: { traceparent: ctx.traceparent, tracestate: 'edge=t61rcWkgMzE' } });
  assert.deepEqual(result.structuredContent, { message: 'traced' });
  const { server, trace } = await traceOf(id, hasFetch);

  assert.equal(server.traceId, ctx.traceId);
  assert.equal(server.parentSpanId, ctx.parentId);
  assert.equal(server.name, 'tools/call echo');
  assert.equal(server.resource['service.name'] !== undefined, true, 'a resource names the service');
  for (const [key, value] of Object.entries({
    'mcp.method.name': 'tools/call',
    'mcp.session.id': sid,
    'mcp.protocol.version': PROTOCOL,
    'jsonrpc.request.id': id,
    'gen_ai.tool.name': 'echo',
    'gen_ai.operation.name': 'execute_tool',
    'network.transport': 'tcp',
  })) assert.equal(server.attributes[key], value, key);
  assert.equal(server.attributes['error.type'], undefined);
  assert.notEqual(server.status.code, 'ERROR');

  // A call run in the session's object has its span there (a call served under a lease, in
  // the Worker, has none): a child of the server span.
  for (const hop of trace.filter((s) => s.kind === 'INTERNAL')) {
    assert.equal(hop.parentSpanId, server.spanId);
    assert.match(hop.name, /^session tools\/call/);
  }
  const clients = fetchSpans(trace);
  assert.equal(clients.length, 1, 'one upstream fetch');
  const [client] = clients;
  assert.ok(descends(trace, client, server), 'the fetch is under the server span');
  assert.equal(client.name, 'POST');
  assert.equal(client.attributes['http.request.method'], 'POST');
  assert.equal(client.attributes['url.full'], `${upstream.url}/echo`);
  assert.equal(client.attributes['server.address'], '127.0.0.1');
  assert.equal(client.attributes['server.port'], Number(new URL(upstream.url).port));
  assert.equal(client.attributes['http.response.status_code'], 200);
  for (const s of trace) assert.ok(s.end >= s.start && s.start > 0n, `${s.name} has its times`);
  assertOneTree(trace, server);

  // The upstream got the context of the client span that called it, and the caller's tracestate.
  const [seen] = seenIn(ctx.traceId, '/echo');
  assert.ok(seen, 'the upstream was sent the trace');
  assert.equal(seen.headers.traceparent, `00-${ctx.traceId}-${client.spanId}-01`);
  assert.match(seen.headers.tracestate ?? '', /(^|,)\s*edge=t61rcWkgMzE\s*(,|$)/);
  assert.deepEqual(await collector.errors(), [], 'every export decoded with the official definitions');
});

test('the log lines join the trace: the request\'s names its server span and the tool, the call\'s its outcome and duration', async () => {
  const sid = await session(worker);
  const ctx = context();
  const { id } = await call(worker, sid, 'echo', { message: 'logged' }, { headers: { traceparent: ctx.traceparent } });
  const { server } = await traceOf(id);
  const entries = worker.logs.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const line = entries.find((e) => e.requestId && e.sessionId === sid && e.method === 'tools/call');
  assert.ok(line, worker.logs.slice(-5).join('\n'));
  assert.equal(line.traceId, ctx.traceId);
  assert.equal(line.spanId, server.spanId);
  assert.equal(line.tool, 'echo');
  assert.equal(typeof line.durationMs, 'number');
  // The call's own line, written where it ended: in the trace, with its outcome and times.
  const ended = entries.find((e) => e.message === 'tool call' && e.sessionId === sid && e.traceId === ctx.traceId);
  assert.ok(ended, worker.logs.slice(-5).join('\n'));
  assert.equal(ended.tool, 'echo');
  assert.equal(ended.outcome, 'ok');
  assert.equal(ended.server, 'traced');
  assert.equal(typeof ended.durationMs, 'number');
  assert.equal(typeof ended.upstreamMs, 'number');
});

test('retries and redirects are events of the one client span, whose context every attempt carries', async () => {
  const sid = await session(worker);
  const ctx = context();
  const key = `flap-${hex(4)}`;
  const { id, result } = await call(worker, sid, 'flaky', { key, fails: 2 }, { headers: { traceparent: ctx.traceparent } });
  assert.deepEqual(result.structuredContent, { attempts: 3 });
  const { server, trace } = await traceOf(id, hasFetch);
  assertOneTree(trace, server);
  const fetches = fetchSpans(trace);
  assert.equal(fetches.length, 1, 'one client span for the request and its retries');
  const [client] = fetches;
  assert.deepEqual(client.events.map((e) => e.name), ['retry', 'retry']);
  assert.equal(client.attributes['http.response.status_code'], 200);
  const attempts = seenIn(ctx.traceId, `/flap/${key}`);
  assert.equal(attempts.length, 3);
  for (const a of attempts) assert.equal(a.headers.traceparent, `00-${ctx.traceId}-${client.spanId}-01`);

  const redirected = context();
  const port = new URL(upstream.url).port;
  const target = `http://localhost:${port}/json?body=${encodeURIComponent('{"moved":true}')}`;
  const moved = await call(worker, sid, 'redirect', { to: target }, { headers: { traceparent: redirected.traceparent } });
  assert.deepEqual(moved.result.structuredContent, { moved: true });
  const { server: server2, trace: trace2 } = await traceOf(moved.id, (t) => t.some((s) => s.kind === 'CLIENT' && s.events.some((e) => e.name === 'redirect')));
  assertOneTree(trace2, server2);
  const hop = trace2.find((s) => s.kind === 'CLIENT' && s.events.some((e) => e.name === 'redirect'));
  const landed = upstream.seen.find((r) => r.url.startsWith('/json') && TRACEPARENT.exec(r.headers.traceparent ?? '')?.[1] === redirected.traceId);
  assert.ok(landed, 'the redirected request carried the trace');
  assert.equal(landed.headers.traceparent, `00-${redirected.traceId}-${hop.spanId}-01`);
});

test('a streamed call\'s progress lines are events of its span in the session\'s object', async () => {
  const sid = await session(worker);
  const ctx = context();
  const id = `progress-${hex(4)}`;
  const res = await post(new URL('/mcp', worker.url), { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'progressing', arguments: {}, _meta: { progressToken: 'p1' } } }, { 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL, accept: 'application/json, text/event-stream', traceparent: ctx.traceparent });
  assert.equal(res.status, 200);
  const body = await res.text();
  assert.match(body, /notifications\/progress/, 'the client got the progress');
  const hop = await collector.waitForSpans((spans) => spans.find((s) => s.traceId === ctx.traceId && s.kind === 'INTERNAL' && s.name === 'session tools/call progressing'), { what: 'the object\'s span of the streamed call' });
  assert.deepEqual(hop.events.map((e) => [e.name, e.attributes['mcp_edge.progress.index']]), [['progress', 1]]);
});

test('params._meta.traceparent parents its message, and wins over the HTTP header', async () => {
  const sid = await session(worker);
  const header = context();
  const meta = context();
  const { id } = await call(worker, sid, 'echo', { message: 'meta' }, { headers: { traceparent: header.traceparent }, meta: { traceparent: meta.traceparent, tracestate: 'meta=1' } });
  const { server, trace } = await traceOf(id, hasFetch);
  assert.equal(server.traceId, meta.traceId);
  assert.equal(server.parentSpanId, meta.parentId);
  // The header's context is kept as a link, as the MCP conventions ask.
  assert.ok(server.links.some((l) => l.traceId === header.traceId && l.spanId === header.parentId), `the header's context linked: ${JSON.stringify(server.links)}`);
  assertOneTree(trace, server);
  const [client] = fetchSpans(trace);
  assert.equal(seenIn(meta.traceId, '/echo')[0]?.headers.traceparent, `00-${meta.traceId}-${client.spanId}-01`);
  assert.equal(inTrace(await collector.spans(), header.traceId).length, 0, 'the header\'s trace got nothing from this message');
  assert.equal(seenIn(header.traceId, '/echo').length, 0);
});

test('a notification\'s _meta.traceparent parents its span too', async () => {
  const res = await post(new URL('/mcp', worker.url), INIT);
  assert.equal(res.status, 200);
  const sid = res.headers.get('mcp-session-id');
  const ctx = context();
  const ack = await post(new URL('/mcp', worker.url), { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: { traceparent: ctx.traceparent } } }, { 'mcp-session-id': sid });
  assert.equal(ack.status, 202);
  const span = await collector.waitForSpans((spans) => inTrace(spans, ctx.traceId).find((s) => s.kind === 'SERVER'), { what: 'the notification\'s span' });
  assert.equal(span.attributes['mcp.method.name'], 'notifications/initialized');
  assert.equal(span.parentSpanId, ctx.parentId);
});

test('the official SDK client: its header parents every request, a call\'s _meta parents that call', async () => {
  const header = context();
  const meta = context();
  const client = new Client({ name: 'traced-sdk', version: '1' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', worker.url), { requestInit: { headers: { traceparent: header.traceparent } } });
  await client.connect(transport);
  try {
    const { tools: listed } = await client.listTools();
    assert.ok(listed.some((t) => t.name === 'echo'));
    const result = await client.callTool({ name: 'echo', arguments: { message: 'sdk' }, _meta: { traceparent: meta.traceparent } });
    assert.deepEqual(result.structuredContent, { message: 'sdk' });
  } finally {
    await client.close();
  }
  const byHeader = await collector.waitForSpans((spans) => {
    const servers = inTrace(spans, header.traceId).filter((s) => s.kind === 'SERVER');
    const methods = servers.map((s) => s.attributes['mcp.method.name']);
    return methods.includes('initialize') && methods.includes('tools/list') ? servers : undefined;
  }, { what: 'initialize and tools/list under the header\'s trace' });
  for (const s of byHeader) {
    assert.equal(s.parentSpanId, header.parentId, `${s.name} is a child of the client's span`);
    assert.notEqual(s.attributes['mcp.method.name'], 'tools/call', 'the call went by its _meta');
  }
  assert.equal(byHeader.find((s) => s.attributes['mcp.method.name'] === 'tools/list').name, 'tools/list');
  const called = await collector.waitForSpans((spans) => inTrace(spans, meta.traceId).find((s) => s.kind === 'SERVER'), { what: 'the call under its _meta trace' });
  assert.equal(called.parentSpanId, meta.parentId);
  assert.equal(called.attributes['gen_ai.tool.name'], 'echo');
  assert.equal(called.attributes['mcp.session.id'], transport.sessionId);
});

test('an upstream MCP server gets the context of the MCP client span in params._meta and in the header', async () => {
  const sid = await session(worker);
  const ctx = context();
  const before = recorder.received.length;
  const { id, result } = await call(worker, sid, 'rec_work', { job: 1 }, { headers: { traceparent: ctx.traceparent } });
  assert.deepEqual(result.content, [{ type: 'text', text: 'done' }]);
  const mcpClient = (t) => t.find((s) => s.kind === 'CLIENT' && s.name.startsWith('tools/call'));
  const { server, trace } = await traceOf(id, (t) => mcpClient(t) && t.some((s) => s.kind === 'CLIENT' && s.parentSpanId === mcpClient(t).spanId));
  assert.equal(server.parentSpanId, ctx.parentId);
  assertOneTree(trace, server);
  const client = mcpClient(trace);
  const sent = recorder.received.slice(before).find((m) => m.method === 'tools/call');
  assert.ok(sent, 'the upstream got the call');
  assert.equal(sent.params?._meta?.traceparent, `00-${ctx.traceId}-${client.spanId}-01`, 'the MCP client span in _meta');
  // The header names the HTTP request's own client span, under the MCP client span.
  const [, traceId, spanId] = TRACEPARENT.exec(sent.headers.traceparent ?? '') ?? [];
  assert.equal(traceId, ctx.traceId, 'the trace in the header');
  const http = trace.find((s) => s.spanId === spanId);
  assert.ok(http && http.kind === 'CLIENT' && http.parentSpanId === client.spanId, `the header's span ${spanId} is an HTTP client span under the MCP one`);
  assert.equal(http.attributes['http.request.method'], 'POST');
});

test('a queued call keeps its trace across the queue: the consumer\'s span and its fetch join the call\'s tree', async () => {
  const sid = await session(worker);
  const ctx = context();
  const { id, result } = await call(worker, sid, 'queued_echo', { message: 'queued' }, { headers: { traceparent: ctx.traceparent } });
  assert.deepEqual(result.structuredContent, { message: 'queued' });
  const { server, trace } = await traceOf(id, (t) => t.some((s) => s.kind === 'CONSUMER') && fetchSpans(t).length > 0);
  assert.equal(server.parentSpanId, ctx.parentId);
  assertOneTree(trace, server);
  const consumer = trace.find((s) => s.kind === 'CONSUMER');
  const [client] = fetchSpans(trace);
  assert.ok(descends(trace, client, consumer), 'the fetch is the delivery\'s');
  assert.equal(seenIn(ctx.traceId, '/echo')[0]?.headers.traceparent, `00-${ctx.traceId}-${client.spanId}-01`);
});

test('a callback call keeps its trace: the upstream is sent it, and the late callback continues it', async () => {
  const sid = await session(worker);
  const ctx = context();
  const key = `cb-${hex(4)}`;
  const id = `callback-${hex(4)}`;
  const pending = post(new URL('/mcp', worker.url), { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'callback_job', arguments: { key } } }, { 'mcp-session-id': sid, traceparent: ctx.traceparent });
  let callbackUrl;
  for (let i = 0; i < 500 && !callbackUrl; i++) {
    callbackUrl = upstream.jobs.get(key);
    if (!callbackUrl) await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(callbackUrl, 'the upstream got the job');
  assert.equal(seenIn(ctx.traceId, `/jobs/${key}`).length, 1, 'the job was sent the trace');
  // A pause, so that whatever the callback starts begins clearly after the call's own spans.
  await new Promise((r) => setTimeout(r, 300));
  const calledBack = BigInt(Date.now()) * 1_000_000n;
  // The workflow answers without any trace context of its own: the callback must find the call's.
  const applied = await fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"report":"done"}' });
  assert.equal(applied.status, 200);
  const res = await pending;
  assert.equal(res.status, 200);
  assert.match(await res.text(), /done/);
  // Something in the call's trace began when the callback came (100 ms for the clocks' grain).
  const { server, trace } = await traceOf(id, (t) => t.some((s) => s.start >= calledBack - 100_000_000n));
  assert.equal(server.parentSpanId, ctx.parentId);
  assertOneTree(trace, server);
});

test('a task keeps its trace: the queued work started by tools/call with a task is in the call\'s trace', async () => {
  const sid = await session(worker);
  const ctx = context();
  const { id, result } = await call(worker, sid, 'queued_echo', { message: 'as a task' }, { headers: { traceparent: ctx.traceparent }, task: { ttl: 60000 } });
  const taskId = result.task?.taskId;
  assert.ok(taskId, `a task was created: ${JSON.stringify(result)}`);
  // Polled without any context: the polls are requests of their own, the work is the call's.
  let status;
  for (let i = 0; i < 200 && status !== 'completed'; i++) {
    const res = await post(new URL('/mcp', worker.url), { jsonrpc: '2.0', id: `poll-${i}`, method: 'tasks/get', params: { taskId } }, { 'mcp-session-id': sid });
    status = (await res.json()).result?.status;
    if (status !== 'completed') await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(status, 'completed');
  const got = await post(new URL('/mcp', worker.url), { jsonrpc: '2.0', id: 'task-result', method: 'tasks/result', params: { taskId } }, { 'mcp-session-id': sid });
  assert.deepEqual((await got.json()).result.structuredContent, { message: 'as a task' });
  const { server, trace } = await traceOf(id, (t) => fetchSpans(t).length > 0);
  assert.equal(server.parentSpanId, ctx.parentId);
  assertOneTree(trace, server);
  const [client] = fetchSpans(trace);
  assert.equal(seenIn(ctx.traceId, '/echo')[0]?.headers.traceparent, `00-${ctx.traceId}-${client.spanId}-01`, 'the task\'s fetch carried the call\'s trace');
});

test('sampling: at ratio 0 a call without context exports nothing, an unsampled parent (00) nothing, a sampled parent (01) its tree', async () => {
  const sid = await session(unsampled);
  const before = new Set((await collector.spans()).map((s) => s.spanId));
  const quiet = [];
  for (let i = 0; i < 5; i++) quiet.push((await call(unsampled, sid, 'echo', { message: `quiet ${i}` })).id);
  const declined = context('00');
  const { id: declinedId, headers } = await call(unsampled, sid, 'echo', { message: 'declined' }, { headers: { traceparent: declined.traceparent } });
  // The unsampled decision still travels on, so the upstream does not start a sampled trace.
  const [passed] = seenIn(declined.traceId, '/echo');
  assert.ok(passed, 'the unsampled context is propagated');
  assert.match(passed.headers.traceparent, /-00$/);

  const kept = context('01');
  const { id } = await call(unsampled, sid, 'echo', { message: 'kept' }, { headers: { traceparent: kept.traceparent } });
  const { server, trace } = await traceOf(id, hasFetch);
  assert.equal(server.parentSpanId, kept.parentId);
  assert.equal(server.contentType, 'application/json', 'this worker exports OTLP/JSON');
  assertOneTree(trace, server);
  // The sampled call's spans came after the others were answered: anything they exported is here.
  await new Promise((r) => setTimeout(r, 1000));
  const fresh = (await collector.spans()).filter((s) => !before.has(s.spanId) && s.traceId !== kept.traceId);
  const fromUnsampled = fresh.filter((s) => quiet.includes(s.attributes['jsonrpc.request.id']) || s.attributes['jsonrpc.request.id'] === declinedId || s.traceId === declined.traceId || s.attributes['mcp.session.id'] === sid);
  assert.deepEqual(fromUnsampled.map((s) => s.name), [], 'nothing of the unsampled calls');
  assert.deepEqual(await collector.errors(), []);
});

test('malformed traceparent values are ignored: the call is answered and starts a trace of its own', async () => {
  const sid = await session(worker);
  const t = hex(16);
  const p = hex(8);
  const malformed = {
    'version ff': `ff-${t}-${p}-01`,
    'all-zero trace id': `00-${'0'.repeat(32)}-${p}-01`,
    'all-zero parent id': `00-${t}-${'0'.repeat(16)}-01`,
    'uppercase hex': `00-${t.toUpperCase()}-${p.toUpperCase()}-01`,
    'short trace id': `00-${t.slice(1)}-${p}-01`,
    'long parent id': `00-${t}-${p}0-01`,
    'short flags': `00-${t}-${p}-1`,
    'version 00 with more fields': `00-${t}-${p}-01-extra`,
    'not hex': `00-${'g'.repeat(32)}-${p}-01`,
    garbage: 'hello',
  };
  for (const [what, traceparent] of Object.entries(malformed)) {
    for (const where of ['header', '_meta']) {
      const options = where === 'header' ? { headers: { traceparent } } : { meta: { traceparent } };
      const { id, result } = await call(worker, sid, 'echo', { message: what }, options);
      assert.deepEqual(result.structuredContent, { message: what }, `${what} in the ${where}: answered`);
      const { server } = await traceOf(id);
      assert.match(server.traceId, /^[0-9a-f]{32}$/);
      assert.notEqual(server.traceId, t, `${what} in the ${where}: not continued`);
      assert.notEqual(server.traceId, '0'.repeat(32));
      assert.equal(server.parentSpanId, '', `${what} in the ${where}: a new trace, a root span`);
    }
  }
});
