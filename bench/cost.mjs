//! What a million sessionful tool calls cost on Cloudflare, for each Workers peer, from what
//! `npm run bench` counted: CPU per call and latency from its timed rows (16 sessions, wrk with 1
//! thread), and Durable Object requests, the objects' active time and their rows read and written
//! from its metered pass (bench/meter.mjs). Prices are Cloudflare's published ones, read
//! 2026-11-27 from developers.cloudflare.com (Workers pricing; Durable Objects pricing, with the
//! SQLite storage backend): the marginal prices beyond the Workers Paid plan's included usage ($5
//! a month with 10 million requests, 30 million CPU ms, 1 million Durable Object requests,
//! 400,000 GB-s, 25 billion rows read and 50 million rows written).
//!
//!   node bench/cost.mjs [bench/results/<date>.json]     (the newest results by default)
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root } from '../scripts/setup.mjs';

export const PRICES = {
  date: '2026-11-27',
  workerRequestsPerMillion: 0.3,
  cpuMsPerMillion: 0.02,
  objectRequestsPerMillion: 0.15,
  gbSecondsPerMillion: 12.5,
  // A Durable Object is billed for 128 MB while it is active, whatever it uses.
  objectGb: 0.128,
  rowsReadPerMillion: 0.001,
  rowsWrittenPerMillion: 1.0,
};

/**
 * One row per Workers peer the meter counted: the dollars of a million calls. CPU is workerd's
 * whole CPU per call as the bench measured it (the Worker's and its objects', and the runtime's
 * own HTTP work), an upper bound of the CPU Cloudflare bills. An object's duration is its active
 * time: the wall time it had a request in flight (an object that can hibernate is not billed
 * while idle).
 */
export function costs(rows, metered, sessions = 16, threads = 1) {
  return metered.flatMap((m) => {
    const r = rows.find((row) => row.server === m.peer && row.sessions === sessions && (row.threads ?? 1) === threads);
    if (!r || r.cpu_ms_per_call == null) return [];
    const usd = {
      requests: PRICES.workerRequestsPerMillion,
      cpu: r.cpu_ms_per_call * PRICES.cpuMsPerMillion,
      objects: m.object_requests_per_call * PRICES.objectRequestsPerMillion,
      duration: (m.object_active_ms_per_call / 1000) * PRICES.objectGb * PRICES.gbSecondsPerMillion,
      storage: m.rows_read_per_call * PRICES.rowsReadPerMillion + m.rows_written_per_call * PRICES.rowsWrittenPerMillion,
    };
    return [{ peer: m.peer, ...m, cpu_ms_per_call: r.cpu_ms_per_call, usd: { ...usd, total: Object.values(usd).reduce((a, b) => a + b, 0) } }];
  });
}

export function costTable(rows, metered) {
  if (!metered?.length) return '';
  const usd = (x) => `$${x.toFixed(3)}`;
  const table = costs(rows, metered);
  const opened = table.filter((c) => c.session);
  return [
    `What a million sessionful tool calls cost on Cloudflare (prices of ${PRICES.date}, beyond the Workers Paid plan's included usage). CPU per call from this run's rows at 16 sessions (workerd's whole CPU, an upper bound); the objects' requests, active time and rows from the metered pass (bench/meter.mjs, 16 sessions).`,
    '',
    '| peer | CPU ms/call | object requests/call | object active ms/call | rows read/call | rows written/call | Worker requests | CPU | object requests | object duration | storage | total |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...table.map((c) => `| ${c.peer} | ${c.cpu_ms_per_call} | ${c.object_requests_per_call} | ${c.object_active_ms_per_call} | ${c.rows_read_per_call} | ${c.rows_written_per_call} | ${usd(c.usd.requests)} | ${usd(c.usd.cpu)} | ${usd(c.usd.objects)} | ${usd(c.usd.duration)} | ${usd(c.usd.storage)} | ${usd(c.usd.total)} |`),
    '',
    'Opening a session (initialize and notifications/initialized: two Worker requests), once per session:',
    '',
    '| peer | object requests | rows read | rows written |',
    '|---|---|---|---|',
    ...opened.map((c) => `| ${c.peer} | ${c.session.object_requests} | ${c.session.rows_read} | ${c.session.rows_written} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = join(root, 'bench', 'results');
  const file = process.argv[2] ?? join(dir, readdirSync(dir).filter((f) => f.endsWith('.json')).sort().pop());
  const results = JSON.parse(readFileSync(file, 'utf8'));
  console.log(costTable(results.rows, results.metered));
}
