//! Where mcp-edge's CPU goes: serves the bench build (run `npm run bench` once to build it) with
//! V8's inspector on, drives 16 sessions with wrk, samples the CPU profile of every isolate and
//! prints self time by function; the profiles are written to .mcp-edge/profile/ for DevTools.
//!
//!   node bench/profile.mjs                  BENCH_PATH=/stateless/mcp for stateless mode; SECS (5)
//!   BENCH_PATH=/mcp,/stateless/mcp node bench/profile.mjs   both loads at once, one wrk each,
//!                                           served by the same isolate in the same moments
//!   INCLUSIVE='leases::|stateless::' node bench/profile.mjs  also the time spent in functions
//!                                           matching the pattern and in what they call
//!   INSPECTOR_PORT (9339)                   another port, for two profiles at once
//!   COLD=1 node bench/profile.mjs           a fresh isolate's first `initialize` instead (the
//!                                           default configuration; KEY=1 sets OAUTH_SIGNING_KEY)
//!
//! Wasm functions have names only in a build that keeps them:
//!   MCP_EDGE_KEEP_NAMES=1 node scripts/build.mjs --out-dir build-prof
//!   DIR=build-prof node bench/profile.mjs
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import WebSocket from 'ws';
import { mkdirSync, writeFileSync } from 'node:fs';
import { serveWorker } from '../scripts/miniflare.mjs';
import { root } from '../scripts/setup.mjs';
import { demoUpstream } from './load.mjs';
const outDir = join(root, '.mcp-edge', 'profile');
mkdirSync(outDir, { recursive: true });
const dir = join(root, process.env.DIR ?? 'build-bench');
const paths = (process.env.BENCH_PATH ?? '/mcp').split(',');
const cold = process.env.COLD === '1';
const inspectorPort = Number(process.env.INSPECTOR_PORT ?? 9339);
const upstream = await demoUpstream();
const upstreamUrl = upstream.url;
const mf = serveWorker({
  dir, config: join(root, cold ? 'mcp-edge.json' : join('bench', 'mcp-edge.bench.json')),
  bindings: { UPSTREAM_URL: upstreamUrl, DEMO_UPSTREAM_URL: upstreamUrl, ...(process.env.KEY === '1' ? { OAUTH_SIGNING_KEY: 'profile-signing-key-0123456789abcdef' } : {}) },
  ratelimits: { RATE_LIMITER: { simple: { limit: 600, period: 60 } } },
  inspectorPort,
});
const url = new URL(paths[0], await mf.ready);
const targets = await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json();
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const INIT = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'b', version: '1' } } });
const sessions = [];
if (paths.includes('/mcp') && !cold) for (let i = 0; i < 16; i++) {
  const res = await fetch(url, { method: 'POST', headers: HEADERS, body: INIT });
  await res.text(); sessions.push(res.headers.get('mcp-session-id'));
}
function wrkOne(secs, path) {
  const child = spawn('wrk', ['-t', '1', '-c', '16', '-d', `${secs}s`, '--latency', '-s', join(root, 'bench', 'load.lua'), url.origin], { env: { ...process.env, BENCH_PATH: path, SESSIONS: path === '/mcp' ? sessions.join(',') : '' } });
  let out = ''; child.stdout.on('data', (d) => (out += d));
  return new Promise((r) => child.on('close', () => r(`${path} ${out.split('\n').find((l) => l.startsWith('{"requests"'))}`)));
}
const wrk = async (secs) => (await Promise.all(paths.map((p) => wrkOne(secs, p)))).join('\n');
if (!cold) await wrk(3);
const profiles = [];
const sockets = targets.map((t) => new WebSocket(t.webSocketDebuggerUrl));
await Promise.all(sockets.map((s) => new Promise((r) => s.on('open', r))));
let id = 1;
const send = (s, method, params = {}) => new Promise((resolve) => {
  const myId = id++;
  const on = (m) => { const msg = JSON.parse(m); if (msg.id === myId) { s.off('message', on); resolve(msg.result); } };
  s.on('message', on); s.send(JSON.stringify({ id: myId, method, params }));
});
for (const s of sockets) { await send(s, 'Profiler.enable'); await send(s, 'Profiler.setSamplingInterval', { interval: 100 }); await send(s, 'Profiler.start'); }
if (cold) {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: HEADERS, body: INIT });
  await res.text();
  console.error(`first initialize: HTTP ${res.status} in ${(performance.now() - started).toFixed(1)} ms`);
  await new Promise((r) => setTimeout(r, 200));
} else {
  console.error(await wrk(Number(process.env.SECS ?? 5)));
}
for (const [i, s] of sockets.entries()) { const r = await send(s, 'Profiler.stop'); profiles.push(r.profile); writeFileSync(join(outDir, `isolate-${i}.cpuprofile`), JSON.stringify(r.profile)); }
// Aggregate self time by function name. A sample lasts until the next one, as DevTools counts
// it: `timeDeltas[i]` is the time since the sample before, so charging it to sample i would give
// the first function after an idle gap the whole gap.
for (const p of profiles) {
  const dt = {}; const byId = new Map(p.nodes.map((n) => [n.id, n]));
  for (let i = 0; i < p.samples.length; i++) { const n = byId.get(p.samples[i]); const k = n.callFrame.functionName || `(${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber})`; dt[k] = (dt[k] ?? 0) + (p.timeDeltas[i + 1] ?? 0); }
  const total = Object.values(dt).reduce((a, b) => a + b, 0);
  console.log('--- total ms', (total / 1000).toFixed(0));
  for (const [k, v] of Object.entries(dt).sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log((100 * v / total).toFixed(1).padStart(5), k.slice(0, 140));
  if (process.env.INCLUSIVE && total > 0) inclusive(p, new RegExp(process.env.INCLUSIVE), total);
}

/** Per cent of the busy time with a function matching `pattern` on the stack (each sample counted
 *  once per function, however often it recurs). Async Rust polls its futures from the outermost
 *  one down, so a future's poll is on the stack of whatever its awaits run synchronously. */
function inclusive(p, pattern, total) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map(p.nodes.flatMap((n) => (n.children ?? []).map((c) => [c, n.id])));
  const name = (n) => n.callFrame.functionName.replace(/::h[0-9a-f]{16}$/, '');
  const time = {};
  for (let i = 0; i < p.samples.length; i++) {
    const seen = new Set();
    for (let id = p.samples[i]; id !== undefined; id = parent.get(id)) {
      const k = name(byId.get(id));
      if (pattern.test(k) && !seen.has(k)) {
        seen.add(k);
        time[k] = (time[k] ?? 0) + (p.timeDeltas[i + 1] ?? 0);
      }
    }
  }
  console.log(`--- with ${pattern.source} on the stack, per cent of the time above`);
  for (const [k, v] of Object.entries(time).sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log((100 * v / total).toFixed(1).padStart(5), k.slice(0, 140));
}
for (const s of sockets) s.close();
await mf.dispose(); upstream.close();
