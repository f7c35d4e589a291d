//! Server CPU per call of two or more builds (or plain JS workers), side by side: a paired check
//! of one change, steadier than comparing two full bench runs on a host whose speed drifts. Each
//! build runs in its own workerd through Miniflare's API; wrk drives 16 connections (16 sessions
//! on /mcp) for 3 s per round, the builds taking turns, after 2 s of warm-up each; medians are
//! printed.
//!
//!   node bench/ab.mjs build-bench /tmp/other/build-bench           (directories of built workers)
//!   node bench/ab.mjs bench/peers/fetch-only.js build-bench         (a .js file: a module worker)
//!   AB_PATH=/stateless/mcp AB_ROUNDS=8 node bench/ab.mjs ...        (/mcp and 6 rounds by default)
//!   AB_SECONDS=8 AB_WARMUP=10 node bench/ab.mjs ...                 (longer rounds and warm-up)
//!   AB_EVENTS=stalled-cycles-frontend:u,branch-misses:u node bench/ab.mjs ...  (more perf events)
//!
//! Paired differences under about 3 % are noise with 3 s rounds on a drifting host; 8 s rounds
//! after 10 s of warm-up bring that to about 1.5 %.
//!
//! Where `perf` can read hardware counters, it also prints the user-space instructions and cycles
//! per call of each workerd. Unlike CPU time, the instruction count hardly moves when the host
//! slows down, so it settles changes of a few percent that CPU time cannot; cycles per
//! instruction show what a gap in CPU time owes to code that runs slower, not to more code.
//!
//! `npm run bench` once first: it installs wrk when missing and builds `build-bench`. Build another
//! directory with `node scripts/build.mjs --out-dir build-x`, in this clone or another. Each build
//! runs with bench/mcp-edge.bench.json (AB_CONFIG names another).
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { Miniflare } from 'miniflare';
import { demoHandler } from '../examples/default/upstream.mjs';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { root } from '../scripts/setup.mjs';
import { childPids, cpuSeconds, countUserEvents } from './proc.mjs';

const path = process.env.AB_PATH ?? '/mcp';
const rounds = Number(process.env.AB_ROUNDS ?? 6);
const roundSeconds = Number(process.env.AB_SECONDS ?? 3);
const warmupSeconds = Number(process.env.AB_WARMUP ?? 2);
// The PMU counts only a few events at once: two beside instructions and cycles counted exactly on
// this host, six did not (perf then shares the counters and scales the counts).
const extraEvents = (process.env.AB_EVENTS ?? '').split(',').filter(Boolean);
const targets = process.argv.slice(2);
if (targets.length < 2) {
  console.error('usage: node bench/ab.mjs <build dir or worker.js> <build dir or worker.js> [...]');
  process.exit(2);
}
const upstream = createServer(demoHandler);
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
const bindings = { UPSTREAM_URL: `http://127.0.0.1:${upstream.address().port}` };

async function start(target) {
  const before = new Set(childPids(process.pid, 'workerd'));
  const file = isAbsolute(target) ? target : join(root, target);
  const mf = target.endsWith('.js')
    ? new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', modules: true, script: readFileSync(file, 'utf8'), bindings, handleRuntimeStdio: drain })
    : serveWorker({ dir: file, config: process.env.AB_CONFIG ?? join(root, 'bench', 'mcp-edge.bench.json'), bindings });
  const url = new URL(path, await mf.ready);
  const pid = childPids(process.pid, 'workerd').find((p) => !before.has(p));
  const sessions = [];
  if (path === '/mcp' && !target.endsWith('.js')) {
    for (let i = 0; i < 16; i++) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ab', version: '1' } } }),
      });
      await res.text();
      sessions.push(res.headers.get('mcp-session-id'));
    }
  }
  return { target, mf, url, pid, sessions, rounds: [] };
}

function wrk(server, seconds) {
  const args = ['-t', '1', '-c', '16', '-d', `${seconds}s`, '-s', join(root, 'bench', 'load.lua'), server.url.origin];
  const child = spawn('wrk', args, { env: { ...process.env, BENCH_PATH: server.url.pathname, SESSIONS: server.sessions.join(',') } });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  return new Promise((resolve) => child.on('close', () => resolve(JSON.parse(out.split('\n').find((l) => l.startsWith('{"requests"'))))));
}

const servers = [];
for (const target of targets) servers.push(await start(target));
for (const server of servers) await wrk(server, warmupSeconds);
for (let round = 0; round < rounds; round++) {
  for (const server of servers) {
    const before = cpuSeconds(server.pid);
    const counter = countUserEvents(server.pid, extraEvents);
    const result = await wrk(server, roundSeconds);
    const counted = await counter?.stop();
    server.rounds.push({
      us: ((cpuSeconds(server.pid) - before) * 1e6) / result.requests,
      perCall: counted && Object.fromEntries(Object.entries(counted).map(([event, n]) => [event, n / result.requests])),
      rps: result.requests / (result.duration_us / 1e6),
      bad: result.non2xx + result.mismatches,
    });
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const s of servers) {
  const us = s.rounds.map((r) => r.us);
  const counts = s.rounds.map((r) => r.perCall).filter(Boolean);
  const thousands = (event) => counts.map((c) => c[event] / 1000);
  const counted = counts.length
    ? `, ${median(thousands('instructions')).toFixed(0)}k instructions per call (rounds ${thousands('instructions').map((k) => k.toFixed(0)).join(' ')}), ` +
      // The counts come named as `countUserEvents` names them: cycles, then the extra events.
      Object.keys(counts[0]).filter((e) => e !== 'instructions').map((e) => `${median(thousands(e)).toFixed(e === 'cycles' ? 0 : 1)}k ${e}`).join(', ')
    : '';
  console.log(`${s.target}: ${median(us).toFixed(0)} µs CPU per call (rounds ${us.map((u) => u.toFixed(0)).join(' ')})${counted}, ${median(s.rounds.map((r) => r.rps)).toFixed(0)} req/s, ${s.rounds.reduce((n, r) => n + r.bad, 0)} bad replies`);
}
for (const s of servers) await s.mf.dispose();
upstream.close();
