// A dead collector costs a reply nothing (issue 40), in workerd: one collector that takes the
// export and never answers, one that refuses every export with 503, and for comparison a worker
// with no telemetry at all. Every call is answered, correctly and as promptly as without a
// collector (loosely: the hung collector never answers, so a reply that waited for it would never
// come); the exporter did try (the collectors saw the attempts); and the spans it could not
// deliver are counted as dropped in GET /metrics (`mcp_edge_otlp_spans_dropped_total`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INIT, post, startMiniflare } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';
import { startCollector } from '../telemetry/collector.mjs';

const SCRAPE_TOKEN = 'scrape-token-4b1d-93ae';
const tools = [{ name: 'echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, http: { method: 'POST', url: '{+env.UPSTREAM_URL}/echo' } }];
const CALLS = 30;

let upstream;
let hung;
let refusing;
const workers = {};

async function startWorker(name, collector) {
  const config = {
    ...(collector
      ? {
          telemetry: {
            otlp: { endpoint: collector.endpoint, encoding: 'protobuf' },
            // A small queue, so that undelivered spans overflow it within the test's calls.
            traces: { sampleRatio: 1, maxQueuedSpans: 16 },
            metrics: { scrapeTokenSecret: 'METRICS_SCRAPE_TOKEN' },
          },
        }
      : {}),
    servers: [{ route: '/mcp', name: `dead-${name}`, version: '1', privateUpstreams: ['127.0.0.1'], tools }],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-dead-collector-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  return startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, bindings: { METRICS_SCRAPE_TOKEN: SCRAPE_TOKEN } });
}

before(async () => {
  upstream = await startTestUpstream();
  hung = await startCollector({ mode: 'hang' });
  refusing = await startCollector({ mode: 'refuse' });
  workers.none = await startWorker('none');
  workers.hung = await startWorker('hung', hung);
  workers.refusing = await startWorker('refusing', refusing);
});
after(async () => {
  for (const w of Object.values(workers)) await w.mf.dispose();
  await hung?.close();
  await refusing?.close();
  await upstream?.close();
});

/** `CALLS` calls one after another on a session of `worker`, each with a new trace: every
 *  reply checked, and the time each took. */
async function calls(worker) {
  const url = new URL('/mcp', worker.url);
  const init = await post(url, INIT);
  assert.equal(init.status, 200);
  const sid = init.headers.get('mcp-session-id');
  assert.equal((await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid })).status, 202);
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    const res = await post(url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { message: `m${i}` } } }, { 'mcp-session-id': sid });
    const body = await res.json();
    times.push(performance.now() - started);
    assert.equal(res.status, 200);
    assert.deepEqual(body.result?.structuredContent, { message: `m${i}` }, JSON.stringify(body));
  }
  return times;
}

/** What `collector` received once it has seen an export attempt: spans are gathered for a
 *  second before they are sent, after the replies. */
async function attempted(collector) {
  for (let i = 0; i < 100; i++) {
    const received = await collector.received();
    if (received.attempts.length > 0) return received;
    await new Promise((r) => setTimeout(r, 100));
  }
  return collector.received();
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The value of a Prometheus sample without labels, as `GET /metrics` renders it. */
async function metric(worker, name) {
  const res = await fetch(new URL('/metrics', worker.url), { headers: { authorization: `Bearer ${SCRAPE_TOKEN}` } });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('a collector that never answers: every call is answered, as promptly as with no telemetry', async () => {
  const baseline = await calls(workers.none);
  const started = Date.now();
  const times = await calls(workers.hung);
  const elapsed = Date.now() - started;
  const { attempts, exports } = await attempted(hung);
  assert.ok(attempts.length > 0, 'the worker did try to export');
  assert.equal(exports.length, 0, 'and the collector answered none of it');
  // Loose bounds, for a shared machine: the collector has answered nothing, so no reply waited
  // for it; and a call costs about what it does with no telemetry.
  assert.ok(elapsed < 20_000, `${CALLS} calls took ${elapsed} ms`);
  assert.ok(median(times) <= median(baseline) + 200, `median ${median(times).toFixed(1)} ms against ${median(baseline).toFixed(1)} ms with no telemetry`);
  assert.ok(Math.max(...times) < 5_000, `the slowest call took ${Math.max(...times).toFixed(0)} ms`);
});

test('a collector that refuses: every call is answered, and the undelivered spans are counted as dropped', async () => {
  await calls(workers.refusing);
  const { attempts } = await attempted(refusing);
  assert.ok(attempts.length > 0, 'the worker did try to export');
  // The figures reach /metrics within a few seconds (flushed with the health figures).
  let dropped;
  for (let i = 0; i < 100 && !(dropped > 0); i++) {
    dropped = await metric(workers.refusing, 'mcp_edge_otlp_spans_dropped_total');
    if (!(dropped > 0)) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(dropped > 0, `mcp_edge_otlp_spans_dropped_total is ${dropped}`);
});

test('the hung collector\'s drops are counted too, once its exports give up or the queue overflows', async () => {
  // The hung worker has made CALLS calls (about three spans each) against a queue of 16, and
  // nothing was ever delivered: past the queue's bound, spans must have been dropped.
  await calls(workers.hung);
  let dropped;
  for (let i = 0; i < 100 && !(dropped > 0); i++) {
    dropped = await metric(workers.hung, 'mcp_edge_otlp_spans_dropped_total');
    if (!(dropped > 0)) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(dropped > 0, `mcp_edge_otlp_spans_dropped_total is ${dropped}`);
});
