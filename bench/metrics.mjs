//! `GET /metrics` with 1,000 tools: a configuration of 1,000 tools (bench/startup.mjs's), each
//! called once so every one has its counters and both histograms, then /metrics scraped
//! SCRAPES times in each format. Reports the exposition's size (raw and gzip), the median and
//! p95 time of one scrape as a client sees it (the hop to the `health` object included), and
//! workerd's CPU per scrape (reading /proc, like bench/scale.mjs: compare rows of one run).
//!
//!   node bench/metrics.mjs        METRICS_SCRAPES (default 50)
//!
//! `npm run bench` runs it too (BENCH_METRICS=0 skips it) and adds its table.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { root, setup } from '../scripts/setup.mjs';
import { build } from '../scripts/build.mjs';
import { serveWorker } from '../scripts/miniflare.mjs';
import { childPids, cpuSeconds } from './proc.mjs';
import { demoUpstream, openSessions, HEADERS } from './load.mjs';
import { manyTools } from './startup.mjs';

const TOKEN = 'bench-scrape-token-0f4d2c9a7e1b';
const TOOLS = 1000;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))];

export async function metricsBench({ dir, scrapes = Number(process.env.METRICS_SCRAPES ?? 50) }) {
  const upstream = await demoUpstream((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ endpoint: req.url }));
  });
  mkdirSync(join(root, '.mcp-edge', 'bench-metrics'), { recursive: true });
  const file = join(root, '.mcp-edge', 'bench-metrics', '1000-tools.json');
  writeFileSync(file, JSON.stringify({ ...manyTools(TOOLS), telemetry: { metrics: { scrapeTokenSecret: 'METRICS_SCRAPE_TOKEN' } } }));
  const before = new Set(childPids(process.pid, 'workerd'));
  const mf = serveWorker({ dir, config: file, bindings: { UPSTREAM_URL: upstream.url, METRICS_SCRAPE_TOKEN: TOKEN } });
  try {
    const base = new URL(await mf.ready);
    const pid = childPids(process.pid, 'workerd').find((p) => !before.has(p));
    const url = new URL('/mcp', base);
    const [sid] = await openSessions(url, 1);
    // Every tool once, 50 at a time.
    for (let i = 0; i < TOOLS; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, TOOLS - i) }, async (_, j) => {
        const body = JSON.stringify({ jsonrpc: '2.0', id: i + j + 1, method: 'tools/call', params: { name: `tool_${i + j}`, arguments: { city: 'Paris' } } });
        const res = await fetch(url, { method: 'POST', headers: { ...HEADERS, 'mcp-session-id': sid }, body });
        await res.text();
      }));
    }
    const scrape = async (accept) => {
      const res = await fetch(new URL('/metrics', base), { headers: { authorization: `Bearer ${TOKEN}`, ...(accept ? { accept } : {}) } });
      if (res.status !== 200) throw new Error(`/metrics: HTTP ${res.status}`);
      return res.text();
    };
    // Until every call reached the health object (each isolate flushes every 5 s).
    const until = Date.now() + 60_000;
    while ((await scrape()).split('\n').filter((l) => l.startsWith('mcp_edge_tool_calls_total{')).length < TOOLS) {
      if (Date.now() > until) throw new Error('the calls did not reach /metrics within 60 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const rows = [];
    for (const [format, accept] of [['Prometheus text 0.0.4', undefined], ['OpenMetrics 1.0.0', 'application/openmetrics-text; version=1.0.0']]) {
      const text = await scrape(accept);
      const times = [];
      const cpu = cpuSeconds(pid);
      for (let i = 0; i < scrapes; i++) {
        const t = performance.now();
        await scrape(accept);
        times.push(performance.now() - t);
      }
      const spent = cpuSeconds(pid) - cpu;
      rows.push({
        format,
        series: text.split('\n').filter((l) => l && !l.startsWith('#')).length,
        bytes: Buffer.byteLength(text),
        gzip_bytes: gzipSync(text).length,
        median_ms: Number(median(times).toFixed(2)),
        p95_ms: Number(p95(times).toFixed(2)),
        cpu_ms_per_scrape: Number(((spent * 1000) / scrapes).toFixed(2)),
      });
    }
    return { tools: TOOLS, scrapes, rows };
  } finally {
    await mf.dispose();
    upstream.close();
  }
}

export function metricsTable(r) {
  return [
    `\`GET /metrics\` with ${r.tools.toLocaleString('en')} tools, each called once (every tool with its counter and both histograms), scraped ${r.scrapes} times per format; the time is a client's, the hop to the \`health\` object included, and the CPU is workerd's.`,
    '',
    '| format | samples | bytes | gzip bytes | median ms | p95 ms | CPU ms/scrape |',
    '|---|---|---|---|---|---|---|',
    ...r.rows.map((m) => `| ${m.format} | ${m.series} | ${m.bytes} | ${m.gzip_bytes} | ${m.median_ms} | ${m.p95_ms} | ${m.cpu_ms_per_scrape} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  console.log(metricsTable(await metricsBench({ dir: build({ outDir: 'build-bench' }) })));
}
