//! Cold start, measured rather than stood in for by a byte budget: for each Workers peer, fresh
//! workerd processes (COLD_RUNS, default 10, the peers taking turns), and for each
//!   - the start: workerd's CPU from its spawn until it serves (its own boot, the same for every
//!     peer, plus loading the peer's modules: compiling and instantiating mcp-edge's wasm here),
//!   - the first request: its time from sending to the whole reply, and workerd's CPU meanwhile
//!     (an `initialize` for the MCP servers, which reads mcp-edge's configuration; the fetch-only
//!     worker's one call, an upstream fetch included).
//! Medians are printed, and each peer's excess over the fetch-only worker's. CPU is read from
//! /proc/<pid>/task/*/schedstat (every thread of workerd).
//!
//!   node bench/coldstart.mjs            (`npm run bench` runs it too, and adds its table)
//!   node bench/coldstart.mjs --builds build-a build-b   (two or more builds of mcp-edge, taking
//!                                        turns with the default configuration: a change's cost;
//!                                        `build-b+key`: with OAUTH_SIGNING_KEY set; `+NAME=value`:
//!                                        with that variable set; COLD_CONFIG: another configuration)
import { mkdirSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';
import { root, setup } from '../scripts/setup.mjs';
import { build, buildRustFloor } from '../scripts/build.mjs';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { childPids } from './proc.mjs';
import { cpuNs, manyTools, median } from './startup.mjs';
import { peerBundles, workerPeer } from './peers.mjs';
import { demoUpstream } from './load.mjs';

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cold', version: '1' } } });
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'cold' } } });
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One fresh workerd made by `create`: its start's CPU, and its first request's time and CPU. */
async function once(create, path, body) {
  const before = new Set(childPids(process.pid, 'workerd'));
  const mf = create();
  try {
    const base = await mf.ready;
    const pid = childPids(process.pid, 'workerd').find((p) => !before.has(p));
    const start = cpuNs(pid);
    const sent = performance.now();
    const res = await fetch(new URL(path, base), { method: 'POST', headers: HEADERS, body });
    await res.text();
    const ms = performance.now() - sent;
    if (res.status !== 200) throw new Error(`first request: HTTP ${res.status}`);
    // workerd may finish its bookkeeping of the request just after the reply.
    await sleep(20);
    return { startCpu: start / 1e6, firstMs: ms, firstCpu: (cpuNs(pid) - start) / 1e6 };
  } finally {
    await mf.dispose();
  }
}

/** The peers' cold starts; `dir` is the bench build of mcp-edge. */
export async function coldStarts({ dir, bundles, upstreamUrl, runs = Number(process.env.COLD_RUNS ?? 10) }) {
  const scratch = join(root, '.mcp-edge', 'coldstart');
  mkdirSync(scratch, { recursive: true });
  const many = join(scratch, '1000-tools.json');
  writeFileSync(many, JSON.stringify(manyTools(1000)));
  // The default configuration's rate limit names the binding the shipped wrangler.toml declares.
  const edge = (config) => () => serveWorker({ dir, config, bindings: { UPSTREAM_URL: upstreamUrl, DEMO_UPSTREAM_URL: upstreamUrl }, ratelimits: { RATE_LIMITER: { simple: { limit: 600, period: 60 } } } });
  const peer = (name) => () => new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', handleRuntimeStdio: drain, ...workerPeer(name, bundles, upstreamUrl) });
  const peers = [
    { name: 'mcp-edge (the default configuration)', create: edge(join(root, 'mcp-edge.json')), path: '/mcp', body: INIT },
    { name: 'mcp-edge (1,000 tools)', create: edge(many), path: '/mcp', body: INIT },
    // Stateless mode (the bench configuration's second server): no session object to create,
    // as `createMcpHandler` creates none.
    { name: 'mcp-edge stateless (the bench configuration)', create: edge(join(root, 'bench', 'mcp-edge.bench.json')), path: '/stateless/mcp', body: INIT },
    { name: 'agents createMcpHandler', create: peer('create-mcp-handler'), path: '/mcp', body: INIT },
    { name: 'agents McpAgent', create: peer('mcp-agent'), path: '/mcp', body: INIT },
    { name: 'fetch-only worker', create: peer('fetch-only'), path: '/', body: CALL },
    // The same work in Rust: what a wasm worker's first request costs before any MCP work.
    ...(bundles['rust-floor'] ? [{ name: 'Rust floor worker', create: peer('rust-floor'), path: '/', body: CALL }] : []),
  ];
  const samples = peers.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (const [j, p] of peers.entries()) samples[j].push(await once(p.create, p.path, p.body));
  }
  const rows = peers.map((p, j) => ({
    peer: p.name,
    start_cpu_ms: Number(median(samples[j].map((s) => s.startCpu)).toFixed(1)),
    first_ms: Number(median(samples[j].map((s) => s.firstMs)).toFixed(1)),
    first_cpu_ms: Number(median(samples[j].map((s) => s.firstCpu)).toFixed(1)),
  }));
  const floor = rows.find((r) => r.peer === 'fetch-only worker');
  for (const r of rows) {
    r.start_cpu_over_floor_ms = Number((r.start_cpu_ms - floor.start_cpu_ms).toFixed(1));
    r.first_over_floor_ms = Number((r.first_ms - floor.first_ms).toFixed(1));
    r.first_cpu_over_floor_ms = Number((r.first_cpu_ms - floor.first_cpu_ms).toFixed(1));
  }
  return { runs, rows };
}

/** The cold start table, as `npm run bench` prints it. */
export function coldStartTable({ runs, rows }) {
  return [
    `Cold start: ${runs} fresh workerd processes per peer, taking turns (medians; "over the floor" is the excess over the fetch-only worker's).`,
    '',
    '| peer | start CPU ms (over the floor) | first request ms (over the floor) | first request CPU ms (over the floor) |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.peer} | ${r.start_cpu_ms} (${r.start_cpu_over_floor_ms}) | ${r.first_ms} (${r.first_over_floor_ms}) | ${r.first_cpu_ms} (${r.first_cpu_over_floor_ms}) |`),
  ].join('\n');
}

/** Builds of mcp-edge (directories) side by side: each a fresh workerd per run, the builds taking
 *  turns, with the default configuration and its `initialize`. */
export async function buildColdStarts({ dirs, upstreamUrl, runs = Number(process.env.COLD_RUNS ?? 10) }) {
  // `<dir>+key`: that build with OAUTH_SIGNING_KEY set, so that its first `initialize` signs the
  // session id without reading the generated key from its object; `<dir>+NAME=value`: with that
  // variable set (a test build's hooks, say). Suffixes combine.
  const signing = ['OAUTH_SIGNING_KEY', 'cold-start-signing-key-0123456789abcdef'];
  const create = (spec) => () => {
    const [dir, ...extras] = spec.split('+');
    const vars = Object.fromEntries(extras.map((e) => (e === 'key' ? signing : e.split('='))));
    return serveWorker({ dir, config: process.env.COLD_CONFIG ?? join(root, 'mcp-edge.json'), bindings: { UPSTREAM_URL: upstreamUrl, DEMO_UPSTREAM_URL: upstreamUrl, ...vars }, ratelimits: { RATE_LIMITER: { simple: { limit: 600, period: 60 } } } });
  };
  const samples = dirs.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (const [j, dir] of dirs.entries()) samples[j].push(await once(create(dir), '/mcp', INIT));
  }
  return dirs.map((dir, j) => ({
    build: dir,
    start_cpu_ms: Number(median(samples[j].map((s) => s.startCpu)).toFixed(1)),
    first_ms: Number(median(samples[j].map((s) => s.firstMs)).toFixed(1)),
    first_cpu_ms: Number(median(samples[j].map((s) => s.firstCpu)).toFixed(1)),
  }));
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--builds') {
  const dirs = process.argv.slice(3).map((d) => (isAbsolute(d) ? d : join(root, d)));
  const upstream = await demoUpstream();
  try {
    console.table(await buildColdStarts({ dirs, upstreamUrl: upstream.url }));
  } finally {
    upstream.close();
  }
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  const dir = build({ outDir: 'build-bench' });
  const upstream = await demoUpstream();
  try {
    console.log(coldStartTable(await coldStarts({ dir, bundles: { ...peerBundles(), 'rust-floor': buildRustFloor() }, upstreamUrl: upstream.url })));
  } finally {
    upstream.close();
  }
}
