//! Tail latency at a fixed rate: wrk keeps every connection busy, so its p99 is mostly queueing
//! behind a saturated server, and a server with less throughput shows a longer tail for that
//! alone. Here each server gets the same offered load, below what any of them serves, sent on a
//! schedule whatever the replies do (open loop: a late reply delays no later request), over 16
//! sessions; each call's latency counts from when it was due, not from when it went out. Where
//! mcp-edge's tail is still longer than the floor's at the same rate, the cause is its own.
//!
//! A row lasts a minute. workerd stops its thread for a garbage collection every few seconds, and
//! for a full one (150–320 ms at 200 calls/s; the floor has them too) every 20–30 s:
//! bench/pauses.mjs shows them. One full collection sets a p99 by itself, and a 10 s row held
//! one or none, so its p99 said mostly where they fell.
//!
//!   node bench/tail.mjs          TAIL_RATES (200,600 calls/s), TAIL_SECONDS (60)
//!   TAIL_WARMUP=20 TAIL_ROTATE=1 node bench/tail.mjs   (longer warm-up; the servers' order
//!                                                       rotated at each rate, so no row always
//!                                                       follows the same one)
//!
//! `npm run bench` runs it too (BENCH_TAIL=0 skips it) and adds its table.
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { root, setup } from '../scripts/setup.mjs';
import { build } from '../scripts/build.mjs';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { workerPeer } from './peers.mjs';
import { demoUpstream, HEADERS, openSessions } from './load.mjs';

const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'bench-echo' } } });

/** One POST on a kept-alive connection; resolves when the whole reply is in. */
function post(agent, url, sessionId) {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent, headers: { ...HEADERS, ...(sessionId ? { 'mcp-session-id': sessionId } : {}), 'content-length': Buffer.byteLength(BODY) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve(res.statusCode === 200 && text.includes('bench-echo')));
    });
    req.on('error', () => resolve(false));
    req.end(BODY);
  });
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * `rate` calls a second for `seconds` on `url`, spread over `sessions`, each sent when due
 * whatever the replies before it do; each call's due and done times, in µs of CLOCK_MONOTONIC
 * (perf's clock with `-k CLOCK_MONOTONIC`: bench/pauses.mjs), and whether it was answered.
 */
export async function schedule(url, sessions, rate, seconds) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const start = nowUs() + 50_000;
  const pending = [];
  for (let i = 0; i < rate * seconds; i++) {
    const due = start + (i * 1e6) / rate;
    const wait = (due - nowUs()) / 1000;
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(post(agent, url, sessions[i % sessions.length]).then((ok) => ({ due, done: nowUs(), ok })));
  }
  const calls = await Promise.all(pending);
  agent.destroy();
  return calls;
}

/** `rate` calls a second for `seconds` on `url`, spread over `sessions`; latencies in ms. */
export async function openLoop(url, sessions, rate, seconds) {
  const calls = await schedule(url, sessions, rate, seconds);
  const latencies = calls.filter((c) => c.ok).map((c) => (c.done - c.due) / 1000).sort((a, b) => a - b);
  const at = (q) => Number(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(2));
  return { calls: calls.length, bad: calls.length - latencies.length, p50_ms: at(0.5), p99_ms: at(0.99), p999_ms: at(0.999), max_ms: Number(latencies.at(-1).toFixed(2)) };
}

export async function tails({ dir, bundles, upstreamUrl, rates = (process.env.TAIL_RATES ?? '200,600').split(',').map(Number), seconds = Number(process.env.TAIL_SECONDS ?? 60) }) {
  const edge = serveWorker({ dir, config: join(root, 'bench', 'mcp-edge.bench.json'), bindings: { UPSTREAM_URL: upstreamUrl } });
  const floor = new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', handleRuntimeStdio: drain, ...workerPeer('fetch-only', bundles, upstreamUrl) });
  const servers = [
    { name: 'mcp-edge', base: await edge.ready, path: '/mcp', sessions: true },
    { name: 'mcp-edge stateless', base: await edge.ready, path: '/stateless/mcp', sessions: false },
    { name: 'fetch-only worker', base: await floor.ready, path: '/', sessions: false },
  ];
  const rows = [];
  try {
    for (const s of servers) {
      s.url = new URL(s.path, s.base);
      s.ids = s.sessions ? await openSessions(s.url, 16) : [undefined];
      // Warm up: JIT, first leases.
      await openLoop(s.url, s.ids, 200, Number(process.env.TAIL_WARMUP ?? 3));
    }
    // The servers take turns at each rate, so a drift of the host's speed spreads over all.
    for (const [i, rate] of rates.entries()) {
      const turn = process.env.TAIL_ROTATE === '1' ? [...servers.slice(i % servers.length), ...servers.slice(0, i % servers.length)] : servers;
      for (const s of turn) rows.push({ server: s.name, rate, ...(await openLoop(s.url, s.ids, rate, seconds)) });
    }
  } finally {
    await edge.dispose();
    await floor.dispose();
  }
  return { seconds, rows };
}

export function tailTable({ seconds, rows }) {
  return [
    `Tail latency at a fixed rate (bench/tail.mjs): each server offered the same calls a second for ${seconds} s over 16 sessions, open loop, latency counted from when each call was due.`,
    '',
    '| server | calls/s | p50 ms | p99 ms | p99.9 ms | max ms | failed |',
    '|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.server} | ${r.rate} | ${r.p50_ms} | ${r.p99_ms} | ${r.p999_ms} | ${r.max_ms} | ${r.bad} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  const dir = build({ outDir: 'build-bench' });
  const upstream = await demoUpstream();
  try {
    console.log(tailTable(await tails({ dir, bundles: {}, upstreamUrl: upstream.url })));
  } finally {
    upstream.close();
  }
}
