//! The metrics over OTLP: with `telemetry.otlp` set, the health object sends the totals to the
//! collector's /v1/metrics (protobuf, cumulative) from the first flush after each export
//! interval. The tests' own collector decodes them with the official opentelemetry-proto
//! definitions, and the counts are the exact ones of the calls made, growing from one export
//! to the next.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INIT, freshPersistDir, post, startMiniflare } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';
import { startCollector } from '../telemetry/collector.mjs';

let collector;
let upstream;
let worker;
let mcp;
let sid;

before(async () => {
  collector = await startCollector();
  upstream = await startTestUpstream();
  const config = {
    telemetry: { otlp: { endpoint: collector.endpoint }, traces: { sampleRatio: 0 }, metrics: { exportIntervalSeconds: 10 } },
    servers: [{
      route: '/mcp',
      name: 'exported',
      version: '1',
      privateUpstreams: ['127.0.0.1'],
      tools: [
        { name: 'echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, http: { url: '{+env.UPSTREAM_URL}/echo' } },
        { name: 'fail', http: { url: '{+env.UPSTREAM_URL}/fail' } },
      ],
    }],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-metrics-otlp-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, persist: freshPersistDir() });
  mcp = new URL('/mcp', worker.url);
  const init = await post(mcp, INIT);
  sid = init.headers.get('mcp-session-id');
  await init.text();
  await (await post(mcp, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid })).text();
});

after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
  await collector?.close();
});

let nextId = 1;
async function call(name, args) {
  const res = await post(mcp, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, { 'mcp-session-id': sid });
  return res.json();
}

/** The metric exports received so far, their metrics by name. */
async function metricExports() {
  const { exports } = await collector.received();
  return exports.filter((e) => e.path === '/v1/metrics').map((e) => {
    const byName = {};
    for (const rm of e.request.resourceMetrics ?? []) for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) byName[m.name] = m;
    return { byName, resource: e.request.resourceMetrics?.[0]?.resource, contentType: e.contentType };
  });
}

const attrs = (point) => Object.fromEntries((point.attributes ?? []).map((a) => [a.key, a.value.stringValue ?? '']));
function calls(exported) {
  return Object.fromEntries(exported.byName.mcp_edge_tool_calls.sum.dataPoints.map((p) => [`${attrs(p).tool} ${attrs(p).outcome}`, Number(p.asInt ?? 0)]));
}

async function waitFor(check, timeoutMs = 40_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = check(await metricExports());
    if (found) return found;
    if (Date.now() > until) throw new Error(`timed out; the collector has ${JSON.stringify((await metricExports()).map(calls))}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('the totals reach the collector over OTLP, cumulative, and grow from one export to the next', async () => {
  assert.equal((await call('echo', { message: 'a' })).result.isError, undefined);
  assert.equal((await call('echo', { message: 'b' })).result.isError, undefined);
  assert.equal((await call('fail', {})).result.isError, true);
  const first = await waitFor((all) => all.find((e) => calls(e)['echo ok'] === 2));
  assert.deepEqual(calls(first), { 'echo ok': 2, 'fail upstream_error': 1 });
  assert.equal(first.contentType, 'application/x-protobuf');
  const sum = first.byName.mcp_edge_tool_calls.sum;
  assert.equal(sum.aggregationTemporality, 'AGGREGATION_TEMPORALITY_CUMULATIVE');
  assert.equal(sum.isMonotonic, true);
  const [point] = sum.dataPoints;
  assert.ok(BigInt(point.startTimeUnixNano) > 0n && BigInt(point.timeUnixNano) >= BigInt(point.startTimeUnixNano));
  const duration = first.byName['mcp.server.operation.duration'];
  assert.equal(duration.unit, 's');
  assert.equal(duration.histogram.aggregationTemporality, 'AGGREGATION_TEMPORALITY_CUMULATIVE');
  const echo = duration.histogram.dataPoints.find((p) => attrs(p)['gen_ai.tool.name'] === 'echo');
  assert.equal(Number(echo.count), 2);
  assert.equal(attrs(echo)['mcp.method.name'], 'tools/call');
  assert.deepEqual(echo.explicitBounds, [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);
  assert.equal(echo.bucketCounts.map(Number).reduce((a, b) => a + b, 0), 2);
  assert.equal(Number(first.byName.mcp_edge_sessions_open.gauge.dataPoints[0].asInt), 1);
  assert.equal(Number(first.byName.mcp_edge_otlp_points_dropped.sum.dataPoints[0].asInt ?? 0), 0);
  assert.ok((first.resource.attributes ?? []).some((a) => a.key === 'service.name'), 'the resource names the service');

  // One more call; the next export (10 s after the first) counts it on top.
  assert.equal((await call('echo', { message: 'c' })).result.isError, undefined);
  const second = await waitFor((all) => all.find((e) => calls(e)['echo ok'] === 3));
  assert.deepEqual(calls(second), { 'echo ok': 3, 'fail upstream_error': 1 });
  assert.equal(second.byName.mcp_edge_tool_calls.sum.dataPoints[0].startTimeUnixNano, point.startTimeUnixNano, 'one start for every cumulative point');
  assert.deepEqual(await collector.errors(), [], 'every export decoded with the official definitions');
});
