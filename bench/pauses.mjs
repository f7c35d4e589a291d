//! Where a fixed rate's tail comes from: serves one server (mcp-edge sessionful, stateless, or
//! the fetch-only floor) in its own workerd, sends it `RATE` calls a second for `SECS` seconds
//! on a schedule (as bench/tail.mjs does), and samples workerd's threads with `perf record`
//! (cpu-clock, call graphs) meanwhile. Prints the latencies, the CPU workerd's main thread spent
//! per call and how much of it went to garbage collection, then each pause: a run of calls more
//! than 40 ms late, what the main thread was doing while they waited (its samples then, by the
//! deepest frames), and for how long.
//!
//!   node bench/pauses.mjs                     MODE=sessionful|stateless|floor (sessionful),
//!                                             RATE (200), SECS (60), WARMUP (20 s at RATE),
//!                                             DIR (build-bench: run `npm run bench` once)
//!
//! Needs `perf` (Debian's linux-perf) and a kernel that lets it sample (perf_event_paranoid <= 1,
//! or root); cpu-clock is a software event, so hosts without hardware counters serve.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Miniflare } from 'miniflare';
import { root } from '../scripts/setup.mjs';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { childPids, perfRecord, perfSamples } from './proc.mjs';
import { workerPeer } from './peers.mjs';
import { demoUpstream, openSessions } from './load.mjs';
import { schedule } from './tail.mjs';

const mode = process.env.MODE ?? 'sessionful';
const rate = Number(process.env.RATE ?? 200);
const seconds = Number(process.env.SECS ?? 60);
const warmup = Number(process.env.WARMUP ?? 20);
const dir = resolve(root, process.env.DIR ?? 'build-bench');
const LATE_US = 40_000;

/** What the main thread's samples are counted under, by a frame anywhere in their stack. */
const KINDS = {
  'garbage collection (V8)': /v8::internal::(Heap|MarkCompact|Scavenger|ScavengeJob|GCTracer|MinorMarkSweep|IncrementalMarking)|cppgc::internal::(Marker|Sweeper)/,
  'API objects freed after a collection': /RefToDelete|maybeDeferDestruction|Wrappable::detachWrapper|CppgcShim::~CppgcShim/,
};

const upstream = await demoUpstream();
const scratch = mkdtempSync(join(tmpdir(), 'mcp-edge-pauses-'));
const mf = mode === 'floor'
  ? new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', handleRuntimeStdio: drain, ...workerPeer('fetch-only', {}, upstream.url) })
  : serveWorker({ dir, config: join(root, 'bench', 'mcp-edge.bench.json'), bindings: { UPSTREAM_URL: upstream.url } });
try {
  const url = new URL(mode === 'floor' ? '/' : mode === 'stateless' ? '/stateless/mcp' : '/mcp', await mf.ready);
  const sessions = mode === 'sessionful' ? await openSessions(url, 16) : [undefined];
  await schedule(url, sessions, rate, warmup);
  const [workerd] = childPids(process.pid, 'workerd');
  const data = join(scratch, 'perf.data');
  const stop = perfRecord(['-p', String(workerd)], data);
  // perf stops the process briefly as it attaches: let that pass before the first call is due.
  await new Promise((r) => setTimeout(r, 500));
  const calls = await schedule(url, sessions, rate, seconds);
  await stop();

  const late = (c) => c.done - c.due;
  const sorted = calls.map(late).sort((a, b) => a - b);
  const at = (q) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] / 1000).toFixed(1);
  console.log(`${mode}, ${rate} calls/s for ${seconds} s: ${calls.length} calls, ${calls.filter((c) => !c.ok).length} failed; p50 ${at(0.5)} ms, p99 ${at(0.99)}, p99.9 ${at(0.999)}, max ${at(1)}`);

  const all = perfSamples(data);
  const byThread = new Map();
  for (const s of all) byThread.set(s.tid, (byThread.get(s.tid) ?? 0) + 1);
  const main = [...byThread].sort((a, b) => b[1] - a[1])[0][0];
  const mainSamples = all.filter((s) => s.tid === main);
  const perCall = (n) => `${((n * 1000) / calls.length).toFixed(0)} µs a call`;
  console.log(`workerd's main thread: ${perCall(mainSamples.length)} (1 ms samples; all its threads: ${perCall(all.length)})`);
  for (const [kind, re] of Object.entries(KINDS)) {
    const n = mainSamples.filter((s) => s.frames.some((f) => re.test(f))).length;
    console.log(`  ${kind}: ${perCall(n)}, ${((100 * n) / mainSamples.length).toFixed(1)} %`);
  }

  // Pauses: calls more than 40 ms late, grouped while they come within 100 ms of each other.
  const pauses = [];
  for (const c of calls.filter((c) => late(c) > LATE_US).sort((a, b) => a.due - b.due)) {
    const last = pauses.at(-1);
    if (last && c.due - last.to < 100_000) {
      last.to = Math.max(last.to, c.done);
      last.calls++;
      last.worst = Math.max(last.worst, late(c));
    } else pauses.push({ from: c.due, to: c.done, calls: 1, worst: late(c) });
  }
  const t0 = calls[0].due;
  console.log(`\n${pauses.length} pauses (calls more than ${LATE_US / 1000} ms late, 100 ms apart); the main thread's samples while each lasted, by their deepest named frames:`);
  for (const p of pauses.sort((a, b) => b.worst - a.worst).slice(0, Number(process.env.PAUSES ?? 8))) {
    const during = mainSamples.filter((s) => s.us >= p.from - 20_000 && s.us <= p.to);
    const counts = new Map();
    for (const s of during) {
      const key = s.frames.filter((f) => f !== '[unknown]').slice(0, 3).join(' < ').slice(0, 180) || '(no named frame)';
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const kinds = Object.entries(KINDS).map(([kind, re]) => `${kind} ${during.filter((s) => s.frames.some((f) => re.test(f))).length}`).join(', ');
    console.log(`- at ${((p.from - t0) / 1e6).toFixed(1)} s: ${p.calls} calls late, the worst by ${(p.worst / 1000).toFixed(0)} ms; the main thread ran ${during.length} ms of ${((p.to - p.from + 20_000) / 1000).toFixed(0)} (${kinds})`);
    for (const [key, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 3)) console.log(`    ${String(n).padStart(4)}  ${key}`);
  }
} finally {
  await mf.dispose();
  upstream.close();
  rmSync(scratch, { recursive: true, force: true });
}
