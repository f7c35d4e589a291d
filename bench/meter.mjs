//! What each Workers peer makes Cloudflare bill, counted: every peer served again with
//! bench/meter.js in front of its modules (its Durable Object stubs and storage counted as they
//! are used), 16 sessions calling `tools/call echo` for a few seconds, and the counts per call:
//! Durable Object requests, the objects' active time, rows read and written. A pass of its own,
//! after the timed rounds, so the meter's own work never shows in their CPU or latency.
//! bench/cost.mjs prices these counts.
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { Miniflare } from 'miniflare';
import { root } from '../scripts/setup.mjs';
import { drain, serveWorker } from '../scripts/miniflare.mjs';
import { workerPeer } from './peers.mjs';
import { openSessions, wrk } from './load.mjs';

/** `modules` (the first one the Worker's main module) behind the meter: an entry that exports
 *  the Worker's handlers and the Durable Object classes `classes`, metered. */
export function meteredModules(modules, classes) {
  const main = modules[0];
  const dir = dirname(main.path);
  const entry = [
    `import inner, * as all from './${basename(main.path)}';`,
    `import { meteredWorker, meteredClass } from './__bench_meter.js';`,
    'export default meteredWorker(inner);',
    ...classes.map((c) => `export const ${c} = meteredClass(all.${c});`),
  ].join('\n');
  return [
    { type: 'ESModule', path: join(dir, '__bench_entry.js'), contents: entry },
    { type: 'ESModule', path: join(dir, '__bench_meter.js'), contents: readFileSync(join(root, 'bench', 'meter.js'), 'utf8') },
    ...modules,
  ];
}

/** The counts since the last read, from the meter's route. */
async function readMeter(base) {
  const res = await fetch(new URL('/__bench/meter', base));
  if (res.status !== 200) throw new Error(`the meter answered HTTP ${res.status}`);
  return res.json();
}

/** Counts per call for each Workers peer; `dir` is the bench build of mcp-edge. */
export async function meterPeers({ dir, bundles, upstreamUrl, seconds = Number(process.env.METER_SECONDS ?? 5), connections = 16 }) {
  const config = join(root, 'bench', 'mcp-edge.bench.json');
  const peerOptions = (name, classes) => {
    const { scriptPath, modules: _, ...options } = workerPeer(name, bundles, upstreamUrl);
    return () => new Miniflare({ host: '127.0.0.1', port: 0, compatibilityDate: '2026-04-01', handleRuntimeStdio: drain, ...options, modulesRoot: dirname(scriptPath), modules: meteredModules([{ type: 'ESModule', path: scriptPath }], classes) });
  };
  const edge = () => serveWorker({ dir, config, bindings: { UPSTREAM_URL: upstreamUrl }, wrapModules: (m) => meteredModules(m, ['McpSession']) });
  const peers = [
    { name: 'mcp-edge', create: edge, path: '/mcp' },
    { name: 'mcp-edge stateless', create: edge, path: '/stateless/mcp' },
    ...(bundles['create-mcp-handler'] ? [{ name: 'agents createMcpHandler', create: peerOptions('create-mcp-handler', []), path: '/mcp' }] : []),
    ...(bundles['mcp-agent'] ? [{ name: 'agents McpAgent', create: peerOptions('mcp-agent', ['EchoAgent']), path: '/mcp' }] : []),
    { name: 'fetch-only worker', create: peerOptions('fetch-only', []), path: '/' },
  ];
  const rows = [];
  for (const peer of peers) {
    const mf = peer.create();
    try {
      const base = await mf.ready;
      const url = new URL(peer.path, base);
      await readMeter(base);
      const sessions = peer.path === '/' ? [] : await openSessions(url, connections);
      const opened = await readMeter(base);
      const result = await wrk(url, { sessions, connections, seconds });
      const counted = await readMeter(base);
      const per = (n) => Number((n / result.requests).toFixed(4));
      rows.push({
        peer: peer.name,
        calls: result.requests,
        bad: result.non2xx + result.mismatches + result.socket_errors,
        object_requests_per_call: per(counted.objectRequests),
        object_active_ms_per_call: per(counted.objectActiveMs),
        rows_read_per_call: per(counted.rowsRead),
        rows_written_per_call: per(counted.rowsWritten),
        // What opening a session (initialize and notifications/initialized) costs, once.
        session: sessions.length ? { object_requests: opened.objectRequests / sessions.length, rows_read: opened.rowsRead / sessions.length, rows_written: opened.rowsWritten / sessions.length } : null,
      });
    } finally {
      await mf.dispose();
    }
  }
  return rows;
}
