//! What reading the configuration costs an isolate: the CPU workerd spends starting (which
//! compiles a configuration of up to 1 MiB, `edge/configured.rs`), on a new isolate's first
//! request (an `initialize`, which compiles a larger one before anything else) and on its second,
//! for four configurations: a minimal one (one server, no tools), one tool, the shipped default,
//! and 1,000 tools. Each run is a fresh workerd; the configurations take turns, and medians are
//! printed. The start and first request's excess over the minimal configuration's is what the
//! configuration adds.
//!
//!   node bench/startup.mjs                 (STARTUP_RUNS=10 fresh isolates per configuration)
//!
//! CPU time is read from /proc/<pid>/task/*/schedstat (nanoseconds, every thread of workerd), so
//! it holds whatever else workerd does in that window; on a host whose speed drifts, compare the
//! rows of one run, not runs.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root, setup } from '../scripts/setup.mjs';
import { build } from '../scripts/build.mjs';
import { serveWorker } from '../scripts/miniflare.mjs';
import { childPids } from './proc.mjs';

/** A configuration of `n` tools, each with a small schema and a templated URL. */
export function manyTools(n) {
  const tools = Array.from({ length: n }, (_, i) => ({
    name: `tool_${i}`,
    title: `Tool ${i}`,
    description: `Calls endpoint ${i} of the upstream with a city and an optional limit.`,
    inputSchema: {
      type: 'object',
      properties: { city: { type: 'string', minLength: 1 }, limit: { type: 'integer', minimum: 1, maximum: 100 } },
      required: ['city'],
    },
    http: { method: 'GET', url: `{+env.UPSTREAM_URL}/endpoint/${i}/{city}{?limit}`, timeoutMs: 10000 },
  }));
  return { servers: [{ name: 'many', version: '1.0.0', privateUpstreams: ['127.0.0.1'], tools }] };
}

/** Nanoseconds of CPU that every thread of `pid` has run. */
export function cpuNs(pid) {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {}
  }
  return total;
}

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'startup', version: '1' } } });

/**
 * A fresh workerd serving `config` (the bench's bindings: upstreams that are never reached, a
 * generous rate limit). Resolves to `{ mf, base, pid }`: the instance, its URL and the workerd
 * whose CPU to read.
 */
export async function freshWorkerd(dir, config) {
  const before = new Set(childPids(process.pid, 'workerd'));
  const mf = serveWorker({ dir, config, bindings: { UPSTREAM_URL: 'http://127.0.0.1:9', DEMO_UPSTREAM_URL: 'http://127.0.0.1:9' }, ratelimits: { RATE_LIMITER: { simple: { limit: 600, period: 60 } } } });
  const base = await mf.ready;
  return { mf, base, pid: childPids(process.pid, 'workerd').find((p) => !before.has(p)) };
}

/** A fresh workerd serving `config`: the CPU of its start and of its first two `initialize`
 *  requests on `route`. */
export async function oneIsolate(dir, config, route = '/mcp') {
  const { mf, base, pid } = await freshWorkerd(dir, config);
  try {
    const started = cpuNs(pid) / 1e6;
    const url = new URL(route, base);
    const request = async () => {
      const start = cpuNs(pid);
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: INIT });
      await res.text();
      if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status}`);
      // workerd may finish its bookkeeping of the request just after the reply.
      await new Promise((r) => setTimeout(r, 20));
      return (cpuNs(pid) - start) / 1e6;
    };
    return { start: started, first: await request(), second: await request() };
  } finally {
    await mf.dispose();
  }
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export async function measureStartup(runs = Number(process.env.STARTUP_RUNS ?? 10)) {
  setup();
  const dir = build();
  const scratch = join(root, '.mcp-edge', 'startup');
  mkdirSync(scratch, { recursive: true });
  const minimal = join(scratch, 'minimal.json');
  writeFileSync(minimal, JSON.stringify({ servers: [{ name: 'minimal', version: '1' }] }));
  const one = join(scratch, '1-tool.json');
  writeFileSync(one, JSON.stringify(manyTools(1), null, 2));
  const many = join(scratch, '1000-tools.json');
  writeFileSync(many, JSON.stringify(manyTools(1000), null, 2));
  const configs = [
    { name: 'minimal (no tools)', file: minimal },
    { name: '1 tool', file: one },
    { name: 'default (mcp-edge.json, 2 tools)', file: join(root, 'mcp-edge.json') },
    { name: '1,000 tools', file: many },
  ];
  return startupRuns(dir, configs, runs);
}

/**
 * `runs` fresh isolates of each configuration (`{ name, file }`), taking turns. Each row gets its
 * file's `bytes`, the medians of the `start`'s, the `first` and the `second` request's CPU, and
 * what the start and first request together `added` over the first configuration's (the
 * baseline).
 */
export async function startupRuns(dir, configs, runs) {
  const start = configs.map(() => []);
  const first = configs.map(() => []);
  const second = configs.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (const [j, c] of configs.entries()) {
      const cpu = await oneIsolate(dir, c.file);
      start[j].push(cpu.start);
      first[j].push(cpu.first);
      second[j].push(cpu.second);
    }
  }
  const both = (j) => median(start[j].map((s, i) => s + first[j][i]));
  return configs.map((c, j) => ({ ...c, bytes: readFileSync(c.file).length, start: median(start[j]), first: median(first[j]), second: median(second[j]), added: both(j) - both(0) }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows = await measureStartup();
  console.log('| configuration | file bytes | start CPU (ms) | 1st request CPU (ms) | 2nd request CPU (ms) | added by the configuration (ms) |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${r.bytes.toLocaleString('en')} | ${r.start.toFixed(2)} | ${r.first.toFixed(2)} | ${r.second.toFixed(2)} | ${r.added.toFixed(2)} |`);
}
