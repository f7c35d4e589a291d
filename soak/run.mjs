//! `npm run soak`: nothing lost, nothing stuck, under load and faults (issue 25). Runs the built
//! Worker in workerd (Miniflare's API, as the bench does; its Durable Objects kept on disk, as
//! under `wrangler dev`) with a fault-injecting upstream (soak/upstream.mjs) and the official
//! server-everything as an upstream MCP server, and drives every kind of traffic at once
//! (soak/traffic.mjs) for SOAK_SECONDS (default 300) with SOAK_CLIENTS clients (default 8), while
//! it injects faults: upstream errors, hangs and slow bodies, clients that drop their stream
//! mid-call, the upstream MCP server restarted, the wasm instance reset (a forced trap: every
//! object's memory gone at once, which is as close to evicting the objects as Miniflare allows),
//! and the workerd process restarted. Then it collects what is still owed, checks every session,
//! and prints one table and `N passed, M failed` over the invariants; the figures also go to
//! .mcp-edge/soak/last.json. `npm test` runs it for 30 s.
//!
//!   SOAK_SECONDS=600 npm run soak
import { createWriteStream, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, setup } from '../scripts/setup.mjs';
import { build } from '../scripts/build.mjs';
import { serveWorker } from '../scripts/miniflare.mjs';
import { childPids, rssMiB } from '../bench/proc.mjs';
import { freePort, startEverything } from '../tests/e2e/mcp_servers.mjs';
import { startSoakUpstream } from './upstream.mjs';
import { KINDS, Op, Session } from './traffic.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 8);
/** Faults come in cycles: the upstream MCP server restarted at 30 % of each, the instance reset
 *  at 50 %, workerd restarted at 70 %. A cycle lasts the run, or 100 s in a longer one. */
const CYCLE_S = Math.min(SECONDS, 100);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...args) => console.error(`[soak ${((performance.now() - t0) / 1000).toFixed(1)}s]`, ...args);
const t0 = performance.now();

setup();
// The test build: its one hook that matters here is the forced trap (`mcp-edge/test-panic`).
const dir = build({ outDir: 'build-test', testHooks: true });
const persist = mkdtempSync(join(tmpdir(), 'mcp-edge-soak-'));
const upstream = await startSoakUpstream();
const mcpPort = await freePort();
let everything = await startEverything(mcpPort);
const port = await freePort();
const logs = { dropped: 0, lines: 0 };
const outDir = join(root, '.mcp-edge', 'soak');
mkdirSync(outDir, { recursive: true });
// workerd's own log lines (one per request, and what went wrong), for a post-mortem of a failure.
const workerdLog = createWriteStream(join(outDir, 'workerd.log'));

function startWorker() {
  return serveWorker({
    dir,
    config: join(root, 'soak', 'mcp-edge.soak.json'),
    port,
    persist,
    bindings: { SOAK_UPSTREAM: upstream.url, SOAK_MCP_UPSTREAM: everything.url, CALLBACK_SIGNING_KEY: 'soak-signing-key-4d2a9e71c0b83f65' },
    handleRuntimeStdio(stdout, stderr) {
      for (const stream of [stdout, stderr]) {
        stream.setEncoding('utf8');
        stream.on('data', (chunk) => {
          for (const line of chunk.split('\n')) {
            if (!line) continue;
            logs.lines++;
            workerdLog.write(`${((performance.now() - t0) / 1000).toFixed(3)} ${line}\n`);
            // Replies nobody collected in time: the soak must collect everything, so any is a fault.
            const dropped = line.includes('kept replies dropped') && line.match(/"count":(\d+)/);
            if (dropped) logs.dropped += Number(dropped[1]);
          }
        });
      }
    },
  });
}

let mf = startWorker();
const base = new URL(await mf.ready);
const mcpUrl = new URL('/mcp', base);
const workerd = () => childPids(process.pid, 'workerd')[0];
/** workerd's resident memory: at the start, just before each restart (the end of each stretch
 *  one process served: flat from one to the next means nothing piles up), at the end, the peak. */
const rss = { start: undefined, beforeRestarts: [], end: undefined, peak: 0 };
const sampleRss = () => {
  let mib;
  try {
    const pid = workerd();
    mib = pid ? rssMiB(pid) : undefined;
  } catch {
    // workerd is exiting (a restart): no reading this time.
  }
  if (mib !== undefined) rss.peak = Math.max(rss.peak, mib);
  return mib;
};

const stats = { duplicated: 0, progressMissing: 0, resumed: 0, disconnects: 0, upstreamFaults: {}, sessionsLost: 0, sessions: 0 };
const faults = [];
const ops = [];
const ctx = {
  stats,
  upstream,
  statelessUrl: new URL('/stateless/mcp', base),
  legacyUrl: new URL('/sse', base),
  op(kind, options) {
    const op = new Op(kind, options);
    ops.push(op);
    return op;
  },
};

/** Opens a session, retrying while the runtime restarts. */
async function openSession(version) {
  for (;;) {
    const session = new Session(mcpUrl, version, stats);
    try {
      await session.open();
      stats.sessions++;
      return session;
    } catch {
      await sleep(200);
    }
  }
}

// SOAK_KINDS=callback,disconnect: only those kinds (to look into one).
const only = process.env.SOAK_KINDS?.split(',');
const kinds = Object.entries(KINDS).filter(([name]) => !only || only.includes(name));
function pickKind(version) {
  const eligible = kinds.filter(([, k]) => !k.versions || k.versions.includes(version));
  let roll = Math.random() * eligible.reduce((n, [, k]) => n + k.weight, 0);
  for (const [name, kind] of eligible) {
    roll -= kind.weight;
    if (roll < 0) return [name, kind];
  }
  return eligible[0];
}

const sessions = [];
let ending = false;
/** A client: one session (a third speak 2025-06-18, whose SSE streams cannot be resumed), and
 *  one call after another, of every kind. A lost session is counted, and replaced. */
async function client(i) {
  const version = i % 3 === 2 ? '2025-06-18' : '2025-11-25';
  let session = await openSession(version);
  sessions.push(session);
  while (!ending) {
    const [, kind] = pickKind(version);
    await kind.run(ctx, session);
    if (session.lost) {
      stats.sessionsLost++;
      log(`session ${session.id} was lost`);
      session = await openSession(version);
      sessions.push(session);
    }
    await sleep(Math.random() * 20);
  }
}

/** Every fault, at its time in each cycle. */
async function inject() {
  const cycles = Math.max(1, Math.floor(SECONDS / CYCLE_S));
  for (let c = 0; c < cycles; c++) {
    const start = c * CYCLE_S * 1000;
    const at = async (fraction, name, action) => {
      const due = start + fraction * CYCLE_S * 1000 - (performance.now() - runStarted);
      if (due > 0) await sleep(due);
      if (ending) return;
      log(name);
      const began = performance.now();
      await action();
      faults.push({ name, atS: Math.round((began - runStarted) / 1000), tookMs: Math.round(performance.now() - began) });
    };
    await at(0.3, 'upstream MCP server restarted', async () => {
      await everything.close();
      everything = await startEverything(mcpPort);
    });
    await at(0.5, 'wasm instance reset (forced trap)', async () => {
      const victim = new Session(mcpUrl, '2025-11-25', stats);
      await victim.open();
      const res = await victim.send({ jsonrpc: '2.0', id: 1, method: 'mcp-edge/test-panic' });
      await res.text();
    });
    await at(0.7, 'workerd restarted', async () => {
      rss.beforeRestarts.push(sampleRss());
      await mf.dispose();
      mf = startWorker();
      await mf.ready;
    });
  }
}

// Warm up: one session answers before the clock starts.
await (await openSession('2025-11-25')).collect();
rss.start = sampleRss();
const runStarted = performance.now();
log(`${CLIENTS} clients for ${SECONDS} s against ${mcpUrl}`);
const sampler = setInterval(sampleRss, 1000);
const clients = Array.from({ length: CLIENTS }, (_, i) => client(i));
const injecting = inject();
await sleep(SECONDS * 1000);
ending = true;
log('traffic stops; waiting for the calls under way');
await Promise.all(clients);
await injecting;

// What is still owed (a deferred call's result after its client dropped the stream, or after a
// restart) is collected the way a client would: its next requests carry it.
const owed = () => sessions.filter((s) => !s.lost && s.awaiting.size > 0);
const collectUntil = performance.now() + 60_000;
while (owed().length && performance.now() < collectUntil) {
  await Promise.all(owed().map((s) => s.collect().catch(() => {})));
  await sleep(500);
}
// Every session still there.
for (const s of sessions) {
  if (s.lost) continue;
  try {
    const res = await s.send({ jsonrpc: '2.0', id: 'final', method: 'ping' }, 'application/json');
    await res.text();
    if (res.status === 404) {
      s.lost = true;
      stats.sessionsLost++;
    }
  } catch {
    stats.sessionsLost++;
  }
}
clearInterval(sampler);
rss.end = sampleRss();
await mf.dispose();
await everything.close();
await upstream.close();

// The report.
const percentile = (values, p) => {
  if (!values.length) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);
};
const mib = (v) => (v === undefined ? '-' : `${v.toFixed(1)} MiB`);
const OUTCOMES = ['answered', 'isError', 'cancelled', 'failed', 'lost'];
const row = (name, list) => {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, list.filter((op) => op.outcome === o).length]));
  const latencies = list.filter((op) => op.latencyMs !== undefined).map((op) => op.latencyMs);
  return { kind: name, sent: list.length, ...counts, duplicated: list.filter((op) => op.answers > 1).length, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
};
const rows = kinds.map(([name]) => row(name, ops.filter((op) => op.kind === name)));
const total = row('all', ops);
const duplicated = total.duplicated + stats.duplicated;
const header = ['kind', 'sent', 'answered', 'isError', 'cancelled', 'failed', 'lost', 'duplicated', 'p50 ms', 'p99 ms'];
const line = (r) => `| ${[r.kind, r.sent, r.answered, r.isError, r.cancelled, r.failed, r.lost, r.duplicated, r.p50 ?? '-', r.p99 ?? '-'].join(' | ')} |`;
const table = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map(line), line({ ...total, kind: '**all**', duplicated })].join('\n');

// Why calls ended as they did, beyond an answer: the commonest reasons per kind and outcome.
const reasons = {};
for (const op of ops) {
  const why = op.outcome === 'isError' ? op.why : op.outcome === 'failed' || op.outcome === 'lost' ? op.failed ?? 'no answer, no end' : undefined;
  if (!why) continue;
  const key = `${op.kind} ${op.outcome}: ${String(why).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').slice(0, 100)}`;
  reasons[key] = (reasons[key] ?? 0) + 1;
}
const why = Object.entries(reasons).sort((a, b) => b[1] - a[1]).slice(0, 20).map(([k, n]) => `  ${n} × ${k}`);
// Each lost call, with when it started: beside the faults' times, it says which broke it.
const lost = ops.filter((op) => op.outcome === 'lost').slice(0, 20).map((op) => `  ${op.kind} started at ${((op.started - runStarted) / 1000).toFixed(1)} s (session ${op.session}, request ${op.request}): ${op.failed ?? 'no answer, no end'}`);

const invariants = [
  ['nothing lost', total.lost === 0, `${total.lost} lost`],
  ['nothing duplicated', duplicated === 0, `${duplicated} duplicated`],
  ['no session lost', stats.sessionsLost === 0, `${stats.sessionsLost} of ${stats.sessions} sessions lost`],
  ['every kept reply collected', logs.dropped === 0, `${logs.dropped} dropped uncollected`],
  ['every kind served', rows.every((r) => r.answered + r.isError + r.cancelled > 0), rows.filter((r) => r.answered + r.isError + r.cancelled === 0).map((r) => r.kind).join(', ') || 'each kind answered (or cancelled) at least once'],
  ['every fault injected', ['upstream MCP server restarted', 'wasm instance reset (forced trap)', 'workerd restarted'].every((f) => faults.some((x) => x.name === f)) && stats.disconnects > 0 && Object.keys(stats.upstreamFaults).length >= 3, `${faults.length} faults, ${stats.disconnects} client disconnects, upstream faults ${JSON.stringify(stats.upstreamFaults)}`],
  ['progress streamed', stats.progressMissing === 0, `${stats.progressMissing} answered without progress`],
];
const passed = invariants.filter(([, ok]) => ok).length;
const report = [
  `soak: ${SECONDS} s, ${CLIENTS} clients, ${stats.sessions} sessions; faults: ${faults.map((f) => `${f.name} at ${f.atS} s`).join('; ')}`,
  '',
  table,
  '',
  `sessions lost: ${stats.sessionsLost}; streams resumed: ${stats.resumed}; client disconnects: ${stats.disconnects}; kept replies dropped uncollected: ${logs.dropped}`,
  `workerd RSS: ${mib(rss.start)} at start; before each restart ${rss.beforeRestarts.map(mib).join(', ') || '-'}; ${mib(rss.end)} at the end (peak ${mib(rss.peak)})`,
  '',
  'why calls ended without an answer, or with an error (the commonest):',
  ...why,
  ...(lost.length ? ['', 'lost calls:', ...lost] : []),
  '',
  ...invariants.map(([name, ok, detail]) => `${ok ? '✓' : '✗'} ${name}: ${detail}`),
  '',
  `${passed} passed, ${invariants.length - passed} failed`,
].join('\n');
console.log(report);
workerdLog.end();
writeFileSync(join(outDir, 'last.json'), JSON.stringify({ date: new Date().toISOString(), seconds: SECONDS, clients: CLIENTS, rows, total, duplicated, stats, faults, rss, logs, invariants }, null, 2));
writeFileSync(join(outDir, 'last.md'), report + '\n');
process.exit(passed === invariants.length ? 0 : 1);
