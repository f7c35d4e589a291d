//! `npm run bench`: mcp-edge against its peers, side by side on this machine. Builds the release
//! worker (bench/mcp-edge.bench.json), serves each server in turn (workers through Miniflare's
//! API, the same workerd as production, without wrangler's DevTools instrumentation), and drives
//! it with wrk (bench/load.lua): every session initializes once, then calls `tools/call echo` in a
//! loop. Writes bench/results/<date>.json and .md and prints the table.
//!
//!   npm run bench                       BENCH_SECONDS (default 10) per run; BENCH_ROUNDS (default 3);
//!                                       BENCH_CONCURRENCY=1,16,64; BENCH_THREADS=1,2 (wrk's);
//!                                       COLD_RUNS=10 fresh isolates per peer for the cold starts
//!                                       (bench/coldstart.mjs), BENCH_COLD=0 to skip them;
//!                                       SCALE_SESSIONS=5000 for the scale run (bench/scale.mjs),
//!                                       BENCH_SCALE=0 to skip it; BENCH_METRICS=0 skips
//!                                       /metrics with 1,000 tools (bench/metrics.mjs); BENCH_TAIL=0 skips the
//!                                       fixed-rate tail latencies (bench/tail.mjs); BENCH_METER=0 skips the
//!                                       metered pass (bench/meter.mjs) and the cost table;
//!                                       BENCH_SERVERS=mcp-edge,fetch-only (names start with these)
//!                                       BENCH_BASELINE=<dir>: another build of mcp-edge (another
//!                                       commit's `node scripts/build.mjs --out-dir …`) beside it;
//!                                       BENCH_TRACING=0 skips tracing's cost (bench/tracing.mjs)
//!                                       BENCH_GOVERNANCE=0 skips governance's (bench/governance.mjs)
//!                                       BENCH_CONNECTIONS=0 skips a connection's (bench/connections.mjs)
//!                                       BENCH_OPENAPI=0 skips Microsoft Graph's import (bench/openapi.mjs)
//!                                       BENCH_CACHE=0 skips result caching's (bench/cache.mjs)
//!                                       BENCH_CODEMODE=0 skips code mode's (bench/codemode.mjs)
//!
//! The health figures (`console.health`, on by default) cost each call a count in memory and each
//! isolate a flush every 5 s: the `health off` rows serve the same configuration with them off,
//! in the same rounds, and the ratios compare the two.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Miniflare } from 'miniflare';
import { root, run, setup } from '../scripts/setup.mjs';
import { build, buildRustFloor } from '../scripts/build.mjs';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { childPids, countUserEvents, cpuSeconds, perfUnavailable, rssMiB } from './proc.mjs';
import { peerBundles, workerPeer } from './peers.mjs';
import { coldStarts, coldStartTable } from './coldstart.mjs';
import { scale, scaleTables } from './scale.mjs';
import { costTable } from './cost.mjs';
import { meterPeers } from './meter.mjs';
import { tails, tailTable } from './tail.mjs';
import { tracing, tracingTable } from './tracing.mjs';
import { governance, governanceTable } from './governance.mjs';
import { connections, connectionsTable } from './connections.mjs';
import { graphBench, graphTable } from './openapi.mjs';
import { cache, cacheTable } from './cache.mjs';
import { codeModeTask, codeModeTable, executeCost, executeCostTable } from './codemode.mjs';
import { demoUpstream, openSessions, wrk } from './load.mjs';
import { metricsBench, metricsTable } from './metrics.mjs';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const rows = [];
const concurrencies = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number);
// wrk's threads: one drives the load from one core, two from both (as the server uses them too).
const threadCounts = (process.env.BENCH_THREADS ?? '1,2').split(',').map(Number);

setup();
if (spawnSync('wrk', ['--version']).error) {
  // wrk is a Debian package; it costs little CPU, so it does not steal the server's.
  run('apt-get', ['install', '-y', '-q', 'wrk']);
}
const dir = build({ outDir: 'build-bench' });
const benchConfig = join(root, 'bench', 'mcp-edge.bench.json');

// BENCH_SERVERS: the servers whose names start with one of these. A peer is built when some
// server it serves may be chosen: `agents` and `agents McpAgent` both need the agents bundles.
const only = (process.env.BENCH_SERVERS ?? '').split(',').filter(Boolean);
const wanted = (prefix) => !only.length || only.some((o) => o.startsWith(prefix) || prefix.startsWith(o));
const peerScripts = {
  ...(wanted('agents') ? peerBundles() : {}),
  ...(wanted('Rust floor') ? { 'rust-floor': buildRustFloor() } : {}),
};

const upstream = await demoUpstream();
const upstreamUrl = upstream.url;

/** Waits for a Miniflare instance; its workerd is the one that was not running before. */
async function served(create) {
  const before = new Set(childPids(process.pid, 'workerd'));
  const mf = create();
  const url = await mf.ready;
  const pid = childPids(process.pid, 'workerd').find((p) => !before.has(p));
  return { url: new URL(url), pid, stop: () => mf.dispose() };
}

function startMiniflare(options) {
  return served(() => new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', handleRuntimeStdio: drain, ...options }));
}

async function startNode(script, env = {}) {
  const child = spawn(process.execPath, [script], { cwd: root, env: { ...process.env, PORT: '0', UPSTREAM_URL: upstreamUrl, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      const m = String(d).match(/listening (\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { url: new URL(`http://127.0.0.1:${port}`), pid: child.pid, stop: () => child.kill() };
}

/** The bench build of mcp-edge; both of its servers (sessionful and stateless) live in one
 *  instance. */
let edge;
function edgeWorker() {
  edge ??= served(() => serveWorker({ dir, config: benchConfig, bindings: { UPSTREAM_URL: upstreamUrl } }));
  return edge;
}

/** The same build and configuration with `console.health.enabled` false: the health figures'
 *  cost is the gap between its rows and mcp-edge's. */
let healthOff;
function healthOffWorker() {
  if (!healthOff) {
    const config = JSON.parse(readFileSync(benchConfig, 'utf8'));
    config.console = { ...config.console, health: { ...config.console?.health, enabled: false } };
    const path = join(root, '.mcp-edge', 'bench-health-off.json');
    mkdirSync(join(root, '.mcp-edge'), { recursive: true });
    writeFileSync(path, JSON.stringify(config));
    healthOff = served(() => serveWorker({ dir, config: path, bindings: { UPSTREAM_URL: upstreamUrl } }));
  }
  return healthOff;
}

/** BENCH_BASELINE names another build of mcp-edge (another commit's `node scripts/build.mjs
 *  --out-dir …`): it runs beside this one, in the same rounds, as the `baseline` rows. */
const baselineDir = process.env.BENCH_BASELINE;
let baseline;
function baselineWorker() {
  baseline ??= served(() => serveWorker({ dir: baselineDir, config: benchConfig, bindings: { UPSTREAM_URL: upstreamUrl } }));
  return baseline;
}

const servers = [
  {
    name: 'mcp-edge',
    path: '/mcp',
    sessions: true,
    start: edgeWorker,
  },
  {
    name: 'mcp-edge stateless',
    path: '/stateless/mcp',
    sessions: false,
    start: edgeWorker,
  },
  {
    name: 'mcp-edge health off',
    path: '/mcp',
    sessions: true,
    start: healthOffWorker,
  },
  {
    name: 'mcp-edge stateless health off',
    path: '/stateless/mcp',
    sessions: false,
    start: healthOffWorker,
  },
  {
    name: 'fetch-only worker',
    path: '/',
    sessions: false,
    start: () => startMiniflare(workerPeer('fetch-only', peerScripts, upstreamUrl)),
  },
  {
    name: 'Rust floor worker',
    path: '/',
    sessions: false,
    start: () => startMiniflare(workerPeer('rust-floor', peerScripts, upstreamUrl)),
  },
  {
    name: 'agents createMcpHandler',
    path: '/mcp',
    sessions: true,
    start: () => startMiniflare(workerPeer('create-mcp-handler', peerScripts, upstreamUrl)),
  },
  {
    name: 'agents McpAgent',
    path: '/mcp',
    sessions: true,
    start: () => startMiniflare(workerPeer('mcp-agent', peerScripts, upstreamUrl)),
  },
  // The SDK's two reply modes: one JSON body per call, and its default, an SSE stream per call.
  {
    name: 'Node SDK server (JSON)',
    path: '/mcp',
    sessions: true,
    start: () => startNode(join(root, 'bench', 'peers', 'node-sdk.mjs'), { JSON_RESPONSE: '1' }),
  },
  {
    name: 'Node SDK server (SSE)',
    path: '/mcp',
    sessions: true,
    start: () => startNode(join(root, 'bench', 'peers', 'node-sdk.mjs'), { JSON_RESPONSE: '0' }),
  },
  ...(baselineDir
    ? [
        { name: 'baseline mcp-edge', path: '/mcp', sessions: true, start: baselineWorker },
        { name: 'baseline mcp-edge stateless', path: '/stateless/mcp', sessions: false, start: baselineWorker },
      ]
    : []),
];

const chosen = servers.filter((s) => !only.length || only.some((o) => s.name.startsWith(o)));
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

// Every server runs at once (idle ones cost nothing) and the runs are interleaved in rounds:
// this host's speed drifts over minutes, and interleaving spreads the drift over all servers
// alike. Each row reports the median of its rounds.
const instances = new Map();
for (const server of chosen) instances.set(server, await server.start());
const runs = new Map();
try {
  for (const c of concurrencies) {
    const sessions = new Map();
    for (const server of chosen) {
      const url = new URL(server.path, instances.get(server).url);
      sessions.set(server, server.sessions ? await openSessions(url, c) : []);
      // Warm up: JIT, isolate, first session objects.
      await wrk(url, { sessions: sessions.get(server), connections: c, seconds });
    }
    for (let round = 0; round < rounds; round++) {
      for (const t of threadsFor(c)) {
        for (const server of chosen) {
          const instance = instances.get(server);
          const url = new URL(server.path, instance.url);
          const cpuBefore = cpuSeconds(instance.pid);
          const counter = countUserEvents(instance.pid);
          const result = await wrk(url, { sessions: sessions.get(server), connections: c, seconds, threads: t });
          const cpu = cpuSeconds(instance.pid) - cpuBefore;
          const counted = await counter?.stop();
          const key = `${server.name}|${c}|${t}`;
          if (!runs.has(key)) runs.set(key, []);
          runs.get(key).push({ result, cpu, instructions: counted?.instructions, rss: rssMiB(instance.pid) });
          console.error(`[bench] round ${round + 1}/${rounds} ${server.name} × ${c} (wrk -t ${t}): ${Math.round(result.requests / (result.duration_us / 1e6))} req/s, p50 ${result.p50_us / 1000} ms`);
        }
      }
    }
  }
} finally {
  for (const instance of new Set(instances.values())) await instance.stop();
}
/** The wrk thread counts a load of `c` connections runs with (no more threads than connections). */
function threadsFor(c) {
  return threadCounts.filter((t) => t <= c);
}
const loads = concurrencies.flatMap((c) => threadsFor(c).map((t) => ({ c, t })));
for (const { c, t } of loads) {
  for (const server of chosen) {
    const all = runs.get(`${server.name}|${c}|${t}`);
    const sum = (f) => all.reduce((n, r) => n + f(r), 0);
    const requests = sum((r) => r.result.requests);
    rows.push({
      server: server.name,
      sessions: c,
      threads: t,
      rps: Math.round(median(all.map((r) => r.result.requests / (r.result.duration_us / 1e6)))),
      rps_rounds: all.map((r) => Math.round(r.result.requests / (r.result.duration_us / 1e6))),
      // Rounded: the median of an even number of rounds is a mean, with float noise in its digits.
      p50_ms: Number(median(all.map((r) => r.result.p50_us / 1000)).toFixed(3)),
      p99_ms: Number(median(all.map((r) => r.result.p99_us / 1000)).toFixed(3)),
      p999_ms: Number(median(all.map((r) => r.result.p999_us / 1000)).toFixed(3)),
      cpu_ms_per_call: requests ? Number(median(all.map((r) => (r.cpu * 1000) / r.result.requests)).toFixed(3)) : null,
      // User-space instructions per call where perf can count them: steadier than CPU time on a
      // host whose speed drifts.
      kinstructions_per_call: requests && all.every((r) => r.instructions > 0) ? Math.round(median(all.map((r) => r.instructions / r.result.requests / 1000))) : null,
      rss_mib: Number(Math.max(...all.map((r) => r.rss)).toFixed(1)),
      non2xx: sum((r) => r.result.non2xx),
      socket_errors: sum((r) => r.result.socket_errors),
      mismatches: sum((r) => r.result.mismatches),
    });
  }
}
// Cold start: fresh workerd processes per Workers peer (bench/coldstart.mjs); BENCH_COLD=0 skips.
const cold = process.env.BENCH_COLD === '0' || !peerScripts['create-mcp-handler'] ? undefined : await coldStarts({ dir, bundles: peerScripts, upstreamUrl });
// Tail latency at a fixed rate, below saturation (bench/tail.mjs); BENCH_TAIL=0 skips.
const tail = process.env.BENCH_TAIL === '0' ? undefined : await tails({ dir, bundles: peerScripts, upstreamUrl });
// The meter: what each Workers peer makes Cloudflare bill per call, counted in a pass of its own
// (bench/meter.mjs); the cost table prices it. BENCH_METER=0 skips.
const metered = process.env.BENCH_METER === '0' ? undefined : await meterPeers({ dir, bundles: peerScripts, upstreamUrl });
// Scale: 5,000 sessions, and 1,000 tools (bench/scale.mjs); BENCH_SCALE=0 skips.
const scaled = process.env.BENCH_SCALE === '0' ? undefined : await scale({ dir });
// GET /metrics with 1,000 tools: its size and the time to render it (bench/metrics.mjs);
// BENCH_METRICS=0 skips.
const metricsRun = process.env.BENCH_METRICS === '0' ? undefined : await metricsBench({ dir });
// Tracing off, sampled at 1 % and at 100 %, paired (bench/tracing.mjs); BENCH_TRACING=0 skips.
const traced = process.env.BENCH_TRACING === '0' ? undefined : await tracing({ dir });
// No policy against governance on, paired (bench/governance.mjs); BENCH_GOVERNANCE=0 skips.
const governed = process.env.BENCH_GOVERNANCE === '0' ? undefined : await governance({ dir });
// A static secret against a connection's token, paired (bench/connections.mjs); BENCH_CONNECTIONS=0 skips.
const connected = process.env.BENCH_CONNECTIONS === '0' ? undefined : await connections({ dir });
// Microsoft Graph's import: time, peak memory, configuration size (bench/openapi.mjs); BENCH_OPENAPI=0 skips.
const graph = process.env.BENCH_OPENAPI === '0' ? undefined : await graphBench({ dir });
// The same call uncached and answered from kept results, paired (bench/cache.mjs); BENCH_CACHE=0 skips.
const cached = process.env.BENCH_CACHE === '0' ? undefined : await cache({ dir });
// The ten-step GitHub task as a plain list, a catalog and in code mode, and what `execute` costs
// (bench/codemode.mjs); BENCH_CODEMODE=0 skips.
const codeMode = process.env.BENCH_CODEMODE === '0' ? undefined : { task: await codeModeTask({ dir }), cost: await executeCost({ dir }) };
upstream.close();

const size = (file) => {
  const bytes = readFileSync(join(dir, file));
  return { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
};
const bundles = Object.fromEntries(readdirSync(dir).filter((f) => /\.(wasm|js)$/.test(f)).map((f) => [f, size(f)]));

const at = (name, c, t) => rows.find((r) => r.server === name && r.sessions === c && r.threads === t);
const ratios = [];
for (const { c, t } of loads) {
  const edge = at('mcp-edge', c, t);
  for (const peer of servers.filter((s) => !s.name.startsWith('mcp-edge') && !s.name.startsWith('baseline'))) {
    const other = at(peer.name, c, t);
    if (edge && other) ratios.push({ sessions: c, threads: t, peer: peer.name, ratio: Number((edge.rps / other.rps).toFixed(2)) });
  }
  const stateless = at('mcp-edge stateless', c, t);
  const floor = at('fetch-only worker', c, t);
  for (const [mine, theirs] of [[edge, at('baseline mcp-edge', c, t)], [stateless, at('baseline mcp-edge stateless', c, t)]]) {
    if (mine && theirs) ratios.push({ sessions: c, threads: t, peer: `${theirs.server} (the build in BENCH_BASELINE)`, ratio: Number((mine.rps / theirs.rps).toFixed(2)) });
    if (mine?.kinstructions_per_call && theirs?.kinstructions_per_call) {
      ratios.push({ sessions: c, threads: t, peer: `${theirs.server} (its instructions per call ÷ ours)`, ratio: Number((theirs.kinstructions_per_call / mine.kinstructions_per_call).toFixed(2)) });
    }
  }
  // The health figures on ÷ off: the same build and configuration, in the same rounds.
  for (const [on, off] of [[edge, at('mcp-edge health off', c, t)], [stateless, at('mcp-edge stateless health off', c, t)]]) {
    if (on && off) ratios.push({ sessions: c, threads: t, peer: `${off.server} (health figures on ÷ off)`, ratio: Number((on.rps / off.rps).toFixed(2)) });
    if (on?.kinstructions_per_call && off?.kinstructions_per_call) {
      ratios.push({ sessions: c, threads: t, peer: `${off.server} (health figures: its instructions per call ÷ ours)`, ratio: Number((off.kinstructions_per_call / on.kinstructions_per_call).toFixed(2)) });
    }
  }
  if (stateless && floor) ratios.push({ sessions: c, threads: t, peer: 'fetch-only worker (stateless mode)', ratio: Number((stateless.rps / floor.rps).toFixed(2)) });
  // Issue 26's targets, as ratios of the same run: CPU per sessionful call, and its p99, over
  // the floor's (lower is better for both).
  if (edge?.cpu_ms_per_call && floor?.cpu_ms_per_call) ratios.push({ sessions: c, threads: t, peer: 'fetch-only worker (CPU per call: ours ÷ its, lower is better)', ratio: Number((edge.cpu_ms_per_call / floor.cpu_ms_per_call).toFixed(2)) });
  if (edge?.p99_ms && floor?.p99_ms) ratios.push({ sessions: c, threads: t, peer: 'fetch-only worker (p99: ours ÷ its, lower is better)', ratio: Number((edge.p99_ms / floor.p99_ms).toFixed(2)) });
  // What any Rust worker pays over the JS floor, and what mcp-edge pays over that.
  const rust = at('Rust floor worker', c, t);
  if (rust?.cpu_ms_per_call && floor?.cpu_ms_per_call) ratios.push({ sessions: c, threads: t, peer: 'fetch-only worker (CPU per call: the Rust floor\'s ÷ the JS floor\'s)', ratio: Number((rust.cpu_ms_per_call / floor.cpu_ms_per_call).toFixed(2)) });
  if (edge?.cpu_ms_per_call && rust?.cpu_ms_per_call) ratios.push({ sessions: c, threads: t, peer: 'Rust floor worker (CPU per call: ours ÷ its, lower is better)', ratio: Number((edge.cpu_ms_per_call / rust.cpu_ms_per_call).toFixed(2)) });
  if (stateless && rust) ratios.push({ sessions: c, threads: t, peer: 'Rust floor worker (stateless mode)', ratio: Number((stateless.rps / rust.rps).toFixed(2)) });
  // The same comparison by the work each call takes, which the host's drift hardly moves.
  if (stateless?.kinstructions_per_call && floor?.kinstructions_per_call) {
    ratios.push({ sessions: c, threads: t, peer: 'fetch-only worker (stateless mode; its instructions per call ÷ ours)', ratio: Number((floor.kinstructions_per_call / stateless.kinstructions_per_call).toFixed(2)) });
  }
}

const machine = { cpus: (await import('node:os')).cpus().length, model: (await import('node:os')).cpus()[0]?.model, node: process.version, seconds, rounds, threads: threadCounts };
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const results = { date: new Date().toISOString(), machine, rows, ratios, bundles, cold, tail, metered, scale: scaled, tracing: traced && { ...traced, rows: traced.rows.map(({ line, ...row }) => row) }, metrics: metricsRun, governance: governed, connections: connected && { ...connected, rows: connected.rows.map(({ line, ...row }) => row) }, graph: graph && { whole: { ...graph.whole, sample: undefined }, part: { ...graph.part, sample: undefined } }, cache: cached && { ...cached, rows: cached.rows.map(({ line, ...row }) => row) }, codeMode };
mkdirSync(join(root, 'bench', 'results'), { recursive: true });
writeFileSync(join(root, 'bench', 'results', `${stamp}.json`), JSON.stringify(results, null, 2) + '\n');

const table = [
  `Measured ${results.date} on ${machine.cpus} × ${machine.model}, Node ${machine.node}, ${seconds} s per run, ${rounds} interleaved rounds (medians; req/s of each round in brackets), wrk with ${threadCounts.join(' and ')} threads.`,
  '',
  '| server | sessions | wrk threads | req/s | p50 ms | p99 ms | p99.9 ms | CPU ms/call | k instructions/call | RSS MiB | non-2xx | checked replies wrong |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.server} | ${r.sessions} | ${r.threads} | ${r.rps} (${r.rps_rounds.join(', ')}) | ${r.p50_ms} | ${r.p99_ms} | ${r.p999_ms} | ${r.cpu_ms_per_call} | ${r.kinstructions_per_call ?? '—'} | ${r.rss_mib} | ${r.non2xx} | ${r.mismatches} |`),
  ...(rows.some((r) => r.kinstructions_per_call) ? [] : ['', `Instructions per call: — in every row, as perf cannot count them here (${perfUnavailable()}).`]),
  '',
  '| sessions | wrk threads | mcp-edge ÷ | ratio |',
  '|---|---|---|---|',
  ...ratios.map((r) => `| ${r.sessions} | ${r.threads} | ${r.peer} | ${r.ratio} |`),
  '',
  '| bundle file | raw bytes | gzip bytes |',
  '|---|---|---|',
  ...Object.entries(bundles).map(([f, s]) => `| ${f} | ${s.raw} | ${s.gzip} |`),
  ...(cold ? ['', coldStartTable(cold)] : []),
  ...(tail ? ['', tailTable(tail)] : []),
  ...(scaled ? ['', scaleTables(scaled)] : []),
  ...(metricsRun ? ['', metricsTable(metricsRun)] : []),
  ...(traced ? ['', tracingTable(traced)] : []),
  ...(governed ? ['', governanceTable(governed)] : []),
  ...(connected ? ['', connectionsTable(connected)] : []),
  ...(graph ? ['', graphTable(graph)] : []),
  ...(cached ? ['', cacheTable(cached)] : []),
  ...(codeMode ? ['', codeModeTable(codeMode.task), '', executeCostTable(codeMode.cost)] : []),
  ...(metered ? ['', costTable(rows, metered)] : []),
].join('\n');
writeFileSync(join(root, 'bench', 'results', `${stamp}.md`), table + '\n');
console.log(table);
