// Secrets never in telemetry (issue 40), black-box in workerd: tools with a deployment secret in
// their URL's path and query, in their headers, and echoed back in the upstream's reply (in every
// spelling tests/e2e/upstream.mjs knows), an upstream MCP server that quotes it in results, logs
// and progress, and an OTLP token sent to the collector as a header. Every byte exported, in the
// protobuf and in the JSON encoding, and every line the Worker logs, is searched for each secret
// in every spelling the redaction knows (src/redact.rs: as written, JSON-escaped, percent-encoded,
// HTML references, base64 and base64url, also inside a longer value); none may hold one.
// Arguments and results are exported only when a tool opts in (`trace.arguments`,
// `trace.results`), and then redacted as replies are.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INIT, freshPersistDir, post, startMiniflare } from './harness.mjs';
import { SPELLINGS, startTestUpstream } from './upstream.mjs';
import { startOwn } from './mcp_servers.mjs';
import { startCollector } from '../telemetry/collector.mjs';

/** The deployment's secret: every character that a spelling treats specially. */
const SECRET = 'Tr4ce-s3cret/key+v&l"q<x>y=z:w u';
/** The collector's bearer token: it belongs in the export's header, and nowhere else. */
const OTLP_TOKEN = 'otlp-Bearer-9f/2+c&d"e<f>g';
const LOOPBACK = ['127.0.0.1', 'localhost'];

const secretHeaders = { 'X-Secret': '{env.TRACE_SECRET}', Authorization: 'Bearer {env.TRACE_SECRET}' };
// The upstream's base URL written out: the secret is TRACE_SECRET alone.
const inspect = (base, name, extra = {}) => ({
  name,
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  // The secret in the path and in the query; /inspect/ echoes both back in its reply.
  http: { method: 'GET', url: `${base}/inspect/{env.TRACE_SECRET}?token={env.TRACE_SECRET}&q={q}`, headers: secretHeaders },
  ...extra,
});
const echoed = (base, name, extra = {}) => ({
  name,
  inputSchema: { type: 'object', properties: { spelling: { type: 'string' }, as: { type: 'string' }, note: { type: 'string' } } },
  // /secret/<spelling> answers with X-Secret spelled so; `as: error` makes it a 500.
  http: { method: 'GET', url: `${base}/secret/{spelling}?as={as}&pad=1&after=1&key={env.TRACE_SECRET}`, headers: secretHeaders },
  ...extra,
});
const OPT_IN = { trace: { arguments: true, results: true } };
const toolsAt = (base) => [inspect(base, 'plain'), inspect(base, 'opted', OPT_IN), echoed(base, 'reply'), echoed(base, 'reply_opted', OPT_IN)];

let collector;
let upstream;
let leaky;
const workers = {};
async function startWorker(encoding) {
  const config = {
    telemetry: {
      otlp: { endpoint: collector.endpoint, encoding, headers: { Authorization: 'Bearer {env.OTLP_TOKEN}' } },
      traces: { sampleRatio: 1 },
    },
    servers: [{
      route: '/mcp',
      name: `secrets-${encoding}`,
      version: '1',
      privateUpstreams: LOOPBACK,
      tools: toolsAt(upstream.url),
      upstreams: [{ name: 'leaky', url: leaky.url, prefix: 'up_', headers: { 'X-Secret': '{env.TRACE_SECRET}' } }],
    }],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-telemetry-secrets-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  return startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, persist: freshPersistDir(), bindings: { TRACE_SECRET: SECRET, OTLP_TOKEN } });
}

before(async () => {
  collector = await startCollector();
  upstream = await startTestUpstream();
  leaky = await startOwn('leaky');
  workers.protobuf = await startWorker('protobuf');
  workers.json = await startWorker('json');
});
after(async () => {
  for (const w of Object.values(workers)) await w.mf.dispose();
  await collector?.close();
  await upstream?.close();
  await leaky?.close();
});

/** What must never show: the first 12 characters of each secret in each spelling, the whole
 *  secret so, and runs of the characters its base64 spellings owe to it alone. */
function fingerprints(secret) {
  const prints = [];
  for (const [name, spell] of Object.entries(SPELLINGS)) {
    if (name.startsWith('base64')) continue;
    prints.push(spell(secret.slice(0, 12)), spell(secret));
  }
  for (const encode of [(s) => Buffer.from(s).toString('base64'), (s) => Buffer.from(s).toString('base64url')]) {
    // At each of the three alignments, a stretch well inside the encoding.
    for (const shift of ['', 'a', 'ab']) prints.push(encode(shift + secret).slice(4, 20));
  }
  prints.push(SPELLINGS['base64-inside'](secret).slice(12, 24));
  return [...new Set(prints)];
}
const PRINTS = [...fingerprints(SECRET), ...fingerprints(OTLP_TOKEN)];

function assertClean(bytes, what) {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  for (const print of PRINTS) assert.ok(!buffer.includes(Buffer.from(print)), `${what} shows ${JSON.stringify(print)}: ${buffer.toString('utf8').slice(0, 2000)}`);
}

async function session(worker) {
  const url = new URL('/mcp', worker.url);
  const res = await post(url, INIT);
  assert.equal(res.status, 200, await res.text());
  const sid = res.headers.get('mcp-session-id');
  assert.equal((await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid })).status, 202);
  return sid;
}

let serial = 0;
async function call(worker, sid, name, args, meta) {
  const id = `secret-${++serial}-${randomBytes(4).toString('hex')}`;
  const res = await post(new URL('/mcp', worker.url), { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } }, { 'mcp-session-id': sid });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return { id, result: JSON.parse(text).result };
}

const serverSpan = (spans, id) => spans.find((s) => s.kind === 'SERVER' && s.attributes['jsonrpc.request.id'] === id);

for (const encoding of ['protobuf', 'json']) {
  test(`${encoding}: no exported byte and no log line holds a secret, in any spelling`, async () => {
    const worker = workers[encoding];
    const sid = await session(worker);
    const ids = [];
    const argMark = `argmark-${randomBytes(6).toString('hex')}`;
    ids.push((await call(worker, sid, 'plain', { q: `${argMark} ${SECRET}` })).id);
    for (const spelling of Object.keys(SPELLINGS)) {
      ids.push((await call(worker, sid, 'reply', { spelling, as: 'text', note: argMark })).id);
    }
    const failed = await call(worker, sid, 'reply', { spelling: 'raw', as: 'error', note: argMark });
    assert.equal(failed.result.isError, true);
    ids.push(failed.id);
    // The upstream MCP server quotes the secret in a log message, in progress and in its result.
    ids.push((await call(worker, sid, 'up_work', { note: argMark }, { progressToken: 'p1' })).id);
    const type = encoding === 'json' ? 'application/json' : 'application/x-protobuf';
    const inspected = (s) => s.kind === 'CLIENT' && s.contentType === type && String(s.attributes['url.full'] ?? '').includes('/inspect/');
    const spans = await collector.waitForSpans((all) => (ids.every((id) => serverSpan(all, id)) && all.some(inspected) ? all : undefined), { what: 'every call\'s server span' });
    // Spans written elsewhere (the session's object) may come in a later export.
    await new Promise((r) => setTimeout(r, 1000));
    // The fetches are there, and their url.full shows neither the path's secret nor a query value.
    const fetches = spans.filter(inspected);
    assert.ok(fetches.length >= 1, 'the /inspect fetch has a client span');
    for (const f of fetches) {
      const full = f.attributes['url.full'];
      assert.ok(full.startsWith(`${upstream.url}/inspect/`), full);
      const query = new URLSearchParams(full.slice(full.indexOf('?') + 1));
      assert.equal(query.get('token'), 'REDACTED', full);
      assert.equal(query.get('q'), 'REDACTED', full);
    }

    // Not opted in: neither the arguments nor the results are exported.
    const bodies = await collector.bodies();
    assert.ok(bodies.length > 0);
    for (const [i, body] of bodies.entries()) {
      assertClean(body, `export ${i}`);
      assert.ok(!body.includes(Buffer.from(argMark)), `export ${i} holds an argument of a tool that did not opt in`);
    }
    const { exports } = await collector.received();
    const mine = exports.filter((e) => e.contentType === type);
    assert.ok(mine.length > 0, `the worker exported ${encoding}`);
    for (const e of mine) {
      assert.equal(e.headers.authorization, `Bearer ${OTLP_TOKEN}`, 'the OTLP headers come from the secrets');
    }
    for (const line of worker.logs) assertClean(line, 'a log line');
    assert.deepEqual(await collector.errors(), []);
    // Last, so that it hides no leak: the call the upstream failed is an error on its server span.
    const failedSpan = serverSpan(spans, failed.id);
    assert.equal(failedSpan.status.code, 'ERROR');
    assert.equal(failedSpan.attributes['error.type'], 'tool_error');
  });

  test(`${encoding}: a tool that opts in exports its arguments and results, redacted`, async () => {
    const worker = workers[encoding];
    const sid = await session(worker);
    const argMark = `optarg-${randomBytes(6).toString('hex')}`;
    const { id, result } = await call(worker, sid, 'opted', { q: `${argMark} ${SECRET}` });
    // /inspect/ answers with the query it got, so the result holds the marker (and the secret,
    // which the reply itself already hides).
    assert.match(JSON.stringify(result), new RegExp(argMark));
    const echo = await call(worker, sid, 'reply_opted', { spelling: 'base64', as: 'text', note: argMark });
    assert.match(echo.result.content[0].text, /\[redacted\]/);
    const spans = await collector.waitForSpans((all) => (serverSpan(all, id) && serverSpan(all, echo.id) ? all : undefined), { what: 'the opted-in calls' });
    for (const [i, body] of (await collector.bodies()).entries()) assertClean(body, `export ${i}`);
    for (const line of worker.logs) assertClean(line, 'a log line');
    // The conventions' opt-in attributes (gen_ai.tool.call.arguments / .result), on a span of
    // the call's trace, redacted as the reply is.
    const attribute = (callId, key) => spans.filter((s) => s.traceId === serverSpan(spans, callId).traceId).map((s) => s.attributes[key]).find((v) => v !== undefined);
    const args = attribute(id, 'gen_ai.tool.call.arguments');
    assert.equal(typeof args, 'string', 'the arguments are exported');
    assert.ok(args.includes(argMark) && args.includes('[redacted]'), `and redacted: ${args}`);
    const results = attribute(id, 'gen_ai.tool.call.result');
    assert.equal(typeof results, 'string', 'the result is exported');
    assert.ok(results.includes(argMark) && results.includes('[redacted]'), `and redacted: ${results}`);
    assert.match(attribute(echo.id, 'gen_ai.tool.call.result') ?? '', /\[redacted\]/, 'a result that echoed the secret in base64, redacted');
    // Tools that did not opt in carry neither attribute on any span.
    for (const s of spans) {
      const trace = spans.filter((t) => t.traceId === s.traceId);
      if (trace.some((t) => ['opted', 'reply_opted'].includes(t.attributes['gen_ai.tool.name']))) continue;
      assert.equal(s.attributes['gen_ai.tool.call.arguments'], undefined, `${s.name} (${s.attributes['gen_ai.tool.name']})`);
      assert.equal(s.attributes['gen_ai.tool.call.result'], undefined, `${s.name} (${s.attributes['gen_ai.tool.name']})`);
    }
  });
}
