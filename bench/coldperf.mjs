//! What a cold start's CPU goes to: for fresh workerd processes (RUNS, default 5), mcp-edge's
//! bench build with the default configuration (its first `initialize`, with OAUTH_SIGNING_KEY
//! set) and the fetch-only floor (its one call), samples workerd with `perf record` (cpu-clock,
//! call graphs) through the start (from its spawn until it serves) and through the first request,
//! and prints each one's mean milliseconds by what the samples were doing: V8 decoding and
//! validating the wasm module, compiling wasm functions at their first call (Liftoff), parsing
//! and compiling JavaScript, garbage collection, workerd's own C++, the kernel.
//!
//!   node bench/coldperf.mjs              DIR (build-bench), RUNS (5), TOP=1 adds the frames
//!
//! Needs `perf` (Debian's linux-perf), allowed to sample every process (the start is sampled
//! system-wide, since workerd starts before its pid is known): root, or perf_event_paranoid <= 0.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Miniflare } from 'miniflare';
import { root } from '../scripts/setup.mjs';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { childPids, perfRecord, perfSamples } from './proc.mjs';
import { workerPeer } from './peers.mjs';
import { demoUpstream } from './load.mjs';

const dir = resolve(root, process.env.DIR ?? 'build-bench');
const runs = Number(process.env.RUNS ?? 5);
const HZ = 5000;
const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cold', version: '1' } } });
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'cold' } } });

/** A sample's kind: the first of these whose pattern a frame of its stack matches. */
const KINDS = [
  ['wasm module: decode and validate', /wasm::(ModuleDecoder|DecodeWasmModule|ValidateFunctions|CompileToNativeModule|WasmEngine::SyncCompile)|Decoder::FullValidationTag/],
  ['wasm: compile at first call (Liftoff)', /ExecuteLiftoffCompilation|LiftoffCompiler|wasm::CompileLazy|WasmCompileLazy/],
  ['wasm: tier-up (TurboFan)', /compiler::Pipeline|TurboFan|wasm::TriggerTierUp/],
  ['JavaScript: parse and compile', /v8::internal::(Parser|PreParser|Compiler|Scanner|BytecodeGenerator|interpreter::)/],
  ['garbage collection', /v8::internal::(Heap|MarkCompact|Scavenger|MinorMarkSweep)|cppgc::internal/],
];

function kindOf(frames) {
  for (const [kind, re] of KINDS) if (frames.some((f) => re.test(f))) return kind;
  const named = frames.find((f) => f !== '[unknown]');
  if (!named) return 'JIT code (JavaScript or wasm)';
  if (named.startsWith('Builtins_')) return 'V8 builtins';
  if (/^v8::/.test(named)) return 'V8 runtime, other';
  if (frames.some((f) => /kj::|capnp::|workerd::|tcmalloc|sqlite/.test(f))) return "workerd's own C++";
  return 'kernel and libc';
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const upstream = await demoUpstream();
const scratch = mkdtempSync(join(tmpdir(), 'mcp-edge-coldperf-'));
const peers = [
  { name: 'mcp-edge', path: '/mcp', body: INIT, create: () => serveWorker({ dir, config: join(root, 'mcp-edge.json'), bindings: { UPSTREAM_URL: upstream.url, DEMO_UPSTREAM_URL: upstream.url, OAUTH_SIGNING_KEY: 'cold-start-signing-key-0123456789abcdef' }, ratelimits: { RATE_LIMITER: { simple: { limit: 600, period: 60 } } } }) },
  { name: 'fetch-only floor', path: '/', body: CALL, create: () => new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', handleRuntimeStdio: drain, ...workerPeer('fetch-only', {}, upstream.url) }) },
];
try {
  const tally = peers.map(() => ({ start: {}, first: {} }));
  for (let run = 0; run < runs; run++) {
    for (const [i, peer] of peers.entries()) {
      // The start: system-wide, from before the spawn until it serves.
      const startFile = join(scratch, `start-${i}-${run}.data`);
      let stop = perfRecord(['-a'], startFile, HZ);
      await sleep(800);
      const before = new Set(childPids(process.pid, 'workerd'));
      const mf = peer.create();
      try {
        const base = await mf.ready;
        const pid = childPids(process.pid, 'workerd').find((p) => !before.has(p));
        await stop();
        // The first request: that process alone; perf stops it briefly as it attaches.
        const firstFile = join(scratch, `first-${i}-${run}.data`);
        stop = perfRecord(['-p', String(pid)], firstFile, HZ);
        await sleep(700);
        const res = await fetch(new URL(peer.path, base), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: peer.body });
        await res.text();
        if (res.status !== 200) throw new Error(`${peer.name}: HTTP ${res.status}`);
        await sleep(30);
        await stop();
        for (const [phase, file] of [['start', startFile], ['first', firstFile]]) {
          for (const { frames } of perfSamples(file, pid)) {
            const kinds = tally[i][phase];
            const kind = kindOf(frames);
            kinds[kind] = (kinds[kind] ?? 0) + 1;
            if (process.env.TOP === '1') {
              const key = `  ${frames.filter((f) => f !== '[unknown]').slice(0, 2).join(' < ').slice(0, 150)}`;
              kinds[key] = (kinds[key] ?? 0) + 1;
            }
          }
        }
      } finally {
        await mf.dispose();
      }
    }
  }
  const ms = (n) => ((n * 1000) / HZ / runs).toFixed(1);
  for (const [i, peer] of peers.entries()) {
    for (const phase of ['start', 'first']) {
      const kinds = tally[i][phase];
      const total = Object.entries(kinds).filter(([k]) => !k.startsWith(' ')).reduce((a, [, v]) => a + v, 0);
      console.log(`${peer.name}, ${phase === 'start' ? 'the start' : 'the first request'}: ${ms(total)} ms of CPU (mean of ${runs})`);
      for (const [kind, n] of Object.entries(kinds).sort((a, b) => b[1] - a[1]).slice(0, process.env.TOP === '1' ? 30 : 12)) console.log(`  ${ms(n).padStart(7)}  ${kind}`);
    }
  }
} finally {
  upstream.close();
  rmSync(scratch, { recursive: true, force: true });
}
