// The test collector itself (tests/telemetry/collector.py), without a worker: the trace tests
// trust what it reports, so it must decode both OTLP encodings with the official definitions,
// give ids back as lowercase hex, refuse what the schema refuses, keep the raw bytes, and fail
// on purpose when told to (hang, slow, refuse) without losing sight of the attempts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { VENV, startCollector } from './collector.mjs';
import { join } from 'node:path';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';
const PARENT = '00f067aa0ba902b7';

/** The same span as OTLP/JSON (ids hex, int64 as strings) and as protobuf bytes, the latter
 *  written by the official Python definitions so the two encodings are checked apart. */
const jsonExport = {
  resourceSpans: [{
    resource: { attributes: [{ key: 'service.name', value: { stringValue: 'mcp-edge' } }] },
    scopeSpans: [{
      scope: { name: 'mcp-edge', version: '1' },
      spans: [{
        traceId: TRACE, spanId: SPAN, parentSpanId: PARENT, name: 'tools/call echo', kind: 2, flags: 257,
        startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000000001000000',
        attributes: [{ key: 'mcp.method.name', value: { stringValue: 'tools/call' } }, { key: 'attempts', value: { intValue: '3' } }],
        events: [{ timeUnixNano: '1700000000000500000', name: 'retry', attributes: [{ key: 'n', value: { intValue: '1' } }] }],
        status: { code: 2, message: 'tool_error' },
      }],
    }],
  }],
};

function protobufExport() {
  const program = `
import sys, json, base64
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
doc = json.loads(sys.stdin.read())
for rs in doc["resourceSpans"]:
    for ss in rs["scopeSpans"]:
        for s in ss["spans"]:
            for k in ("traceId", "spanId", "parentSpanId"):
                s[k] = base64.b64encode(bytes.fromhex(s[k])).decode()
m = json_format.ParseDict(doc, trace_service_pb2.ExportTraceServiceRequest())
sys.stdout.buffer.write(m.SerializeToString())
`;
  const r = spawnSync(join(VENV, 'bin', 'python'), ['-c', program], { input: JSON.stringify(jsonExport) });
  assert.equal(r.status, 0, String(r.stderr));
  return r.stdout;
}

let collector;
before(async () => {
  collector = await startCollector();
});
after(() => collector?.close());

const post = (path, type, body, headers = {}) => fetch(`${collector.endpoint}${path}`, { method: 'POST', headers: { 'content-type': type, ...headers }, body });

test('protobuf, gzipped protobuf and OTLP/JSON decode to the same span, ids in lowercase hex', async () => {
  await collector.reset();
  const bytes = protobufExport();
  const pb = await post('/v1/traces', 'application/x-protobuf', bytes);
  assert.equal(pb.status, 200);
  assert.equal(pb.headers.get('content-type'), 'application/x-protobuf');
  assert.equal((await pb.arrayBuffer()).byteLength, 0, 'an empty ExportTraceServiceResponse');
  assert.equal((await post('/v1/traces', 'application/x-protobuf', gzipSync(bytes), { 'content-encoding': 'gzip' })).status, 200);
  const js = await post('/v1/traces', 'application/json', JSON.stringify(jsonExport));
  assert.equal(js.status, 200);
  assert.deepEqual(await js.json(), {});
  const spans = await collector.spans();
  assert.equal(spans.length, 3);
  for (const s of spans) {
    assert.equal(s.traceId, TRACE);
    assert.equal(s.spanId, SPAN);
    assert.equal(s.parentSpanId, PARENT);
    assert.equal(s.kind, 'SERVER');
    assert.equal(s.flags, 257);
    assert.deepEqual(s.attributes, { 'mcp.method.name': 'tools/call', attempts: 3 });
    assert.deepEqual(s.events, [{ name: 'retry', attributes: { n: 1 } }]);
    assert.deepEqual(s.status, { code: 'ERROR', message: 'tool_error' });
    assert.deepEqual(s.resource, { 'service.name': 'mcp-edge' });
  }
  assert.deepEqual(spans.map((s) => s.contentType), ['application/x-protobuf', 'application/x-protobuf', 'application/json']);
  const bodies = await collector.bodies();
  assert.ok(bodies[0].equals(bytes) && bodies[1].equals(bytes), 'the raw bytes are kept, unzipped');
  assert.deepEqual(await collector.errors(), []);
});

test('what the schema refuses is reported: base64 or uppercase ids in JSON, unknown fields, garbage', async () => {
  await collector.reset();
  const withIds = (traceId) => JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId: SPAN, name: 'x' }] }] }] });
  assert.equal((await post('/v1/traces', 'application/json', withIds(Buffer.from(TRACE, 'hex').toString('base64')))).status, 400);
  assert.equal((await post('/v1/traces', 'application/json', withIds(TRACE.toUpperCase()))).status, 400);
  // Unknown fields are accepted (receivers must ignore them) but reported.
  assert.equal((await post('/v1/traces', 'application/json', JSON.stringify({ resourceSpans: [{ bogus: 1 }] }))).status, 200);
  assert.equal((await post('/v1/traces', 'application/x-protobuf', Buffer.from([0x0a, 0xff, 0xff]))).status, 400);
  assert.equal((await post('/v1/traces', 'text/plain', 'hello')).status, 400);
  assert.equal((await collector.errors()).length, 5);
});

test('metrics decode with the official definitions too', async () => {
  await collector.reset();
  const body = { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'mcp_edge_calls_total', sum: { dataPoints: [{ asInt: '4', attributes: [{ key: 'outcome', value: { stringValue: 'ok' } }] }], aggregationTemporality: 2, isMonotonic: true } }] }] }] };
  assert.equal((await post('/v1/metrics', 'application/json', JSON.stringify(body))).status, 200);
  const { exports, errors } = await collector.received();
  assert.deepEqual(errors, []);
  assert.equal(exports[0].request.resourceMetrics[0].scopeMetrics[0].metrics[0].sum.dataPoints[0].asInt, '4');
});

test('a collector told to fail: refuse answers 503, slow answers late, hang never answers; each attempt is seen', async () => {
  await collector.reset();
  const body = JSON.stringify(jsonExport);
  await collector.setMode('refuse');
  assert.equal((await post('/v1/traces', 'application/json', body)).status, 503);
  await collector.setMode('slow', 1);
  const started = Date.now();
  assert.equal((await post('/v1/traces', 'application/json', body)).status, 200);
  assert.ok(Date.now() - started >= 900, 'answered after its delay');
  await collector.setMode('hang');
  const hung = await Promise.race([post('/v1/traces', 'application/json', body).then(() => 'answered', () => 'failed'), new Promise((r) => setTimeout(() => r('still waiting'), 1500))]);
  assert.equal(hung, 'still waiting');
  await collector.setMode('ok');
  const { attempts, exports } = await collector.received();
  assert.deepEqual(attempts.map((a) => a.mode), ['refuse', 'slow', 'hang']);
  assert.equal(exports.length, 1, 'only the slow one was taken');
});

test('a sink (the bench\'s collector) answers at once and only counts', async () => {
  await collector.reset();
  await collector.setMode('sink');
  const body = JSON.stringify(jsonExport);
  const res = await post('/v1/traces', 'application/json', body);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), {});
  await collector.setMode('ok');
  const { sunk, exports, attempts } = await collector.received();
  assert.deepEqual(sunk, { exports: 1, bytes: Buffer.byteLength(body) });
  assert.equal(exports.length + attempts.length, 0, 'nothing kept');
});
