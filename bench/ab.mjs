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
//!   node bench/ab.mjs build-bench build-bench=/tmp/other-config.json  (one build, two configurations)
//!   AB_TOGETHER=1 node bench/ab.mjs ...                             (every build loaded at once)
//!   node bench/ab.mjs rust-floor:.mcp-edge/rust-floor rust-floor:/tmp/floor-2  (Rust floors, built
//!                                                                   by scripts/build.mjs's buildRustFloor)
//!
//! Each build after the first also gets the median of its rounds' CPU per call over the first's
//! in the same round. Where perf cannot count instructions, AB_TOGETHER=1 is the steadier check:
//! the builds share each moment of the host's drift.
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
//!
//! AB_PREPARE names a module whose `prepare({ target, url, mf })` runs once each server has
//! started and resolves to the headers its sessions and calls carry (a signed-in caller's
//! `Authorization`, after whatever set-up that caller needs): bench/connections.mjs uses it. When
//! the module also has `report({ target, url, calls })`, what it resolves to is printed after the
//! rounds as `<target> report: <JSON>`, with `calls` the calls each server answered, warm-up included.
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { Miniflare } from 'miniflare';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { root } from '../scripts/setup.mjs';
import { childPids, cpuSeconds, countUserEvents } from './proc.mjs';
import { demoUpstream, openSessions, wrk } from './load.mjs';
import { workerPeer } from './peers.mjs';

const path = process.env.AB_PATH ?? '/mcp';
const rounds = Number(process.env.AB_ROUNDS ?? 6);
const together = process.env.AB_TOGETHER === '1';
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
const hooks = process.env.AB_PREPARE ? await import(isAbsolute(process.env.AB_PREPARE) ? process.env.AB_PREPARE : join(root, process.env.AB_PREPARE)) : {};
const { prepare } = hooks;
const upstream = await demoUpstream();
// AB_BINDINGS: more vars and secrets for every server, as JSON (a signed-in bench's passwords).
const bindings = { UPSTREAM_URL: upstream.url, ...JSON.parse(process.env.AB_BINDINGS ?? '{}') };

async function start(target) {
  const before = new Set(childPids(process.pid, 'workerd'));
  // `<dir>=<config>` serves that build with a configuration of its own; `rust-floor:<dir>`, a
  // build of the Rust floor, which has no sessions.
  const floor = target.startsWith('rust-floor:');
  const [path_, own] = target.replace(/^rust-floor:/, '').split('=');
  const file = isAbsolute(path_) ? path_ : join(root, path_);
  // A plain worker (a Rust floor or a .js file) has no sessions and no configuration.
  const plain = floor ? workerPeer('rust-floor', { 'rust-floor': file }, upstream.url) : target.endsWith('.js') ? { modules: true, script: readFileSync(file, 'utf8'), bindings } : null;
  const mf = plain
    ? new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', handleRuntimeStdio: drain, ...plain })
    : serveWorker({ dir: file, config: own ?? process.env.AB_CONFIG ?? join(root, 'bench', 'mcp-edge.bench.json'), bindings });
  const url = new URL(path, await mf.ready);
  const pid = childPids(process.pid, 'workerd').find((p) => !before.has(p));
  const headers = prepare ? await prepare({ target, url, mf }) : {};
  const sessions = path === '/mcp' && !plain ? await openSessions(url, 16, headers) : [];
  return { target, mf, url, pid, sessions, headers, calls: 0, rounds: [] };
}

const load = async (server, seconds) => {
  const result = await wrk(server.url, { sessions: server.sessions, connections: 16, seconds, headers: server.headers });
  server.calls += result.requests;
  return result;
};

const servers = [];
for (const target of targets) servers.push(await start(target));
for (const server of servers) await load(server, warmupSeconds);
/** One round of `server`: its CPU per call, and what perf counted. */
async function round(server) {
  const before = cpuSeconds(server.pid);
  const counter = countUserEvents(server.pid, extraEvents);
  const result = await load(server, roundSeconds);
  const counted = await counter?.stop();
  server.rounds.push({
    us: ((cpuSeconds(server.pid) - before) * 1e6) / result.requests,
    perCall: counted && Object.fromEntries(Object.entries(counted).map(([event, n]) => [event, n / result.requests])),
    rps: result.requests / (result.duration_us / 1e6),
    bad: result.non2xx + result.mismatches,
  });
}
for (let r = 0; r < rounds; r++) {
  // AB_TOGETHER=1 loads every build at once, so a drift of the host's speed lands on all alike.
  if (together) await Promise.all(servers.map(round));
  else for (const server of servers) await round(server);
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
  // Each round's CPU per call over the first build's in the same round: the paired ratio.
  const paired = s === servers[0] ? '' : `, ${median(s.rounds.map((r, i) => r.us / servers[0].rounds[i].us)).toFixed(3)}× the first's (median of the rounds' ratios)`;
  console.log(`${s.target}: ${median(us).toFixed(0)} µs CPU per call (rounds ${us.map((u) => u.toFixed(0)).join(' ')})${counted}${paired}, ${median(s.rounds.map((r) => r.rps)).toFixed(0)} req/s, ${s.rounds.reduce((n, r) => n + r.bad, 0)} bad replies`);
}
if (hooks.report) for (const s of servers) console.log(`${s.target} report: ${JSON.stringify(await hooks.report({ target: s.target, url: s.url, calls: s.calls }))}`);
for (const s of servers) await s.mf.dispose();
upstream.close();
