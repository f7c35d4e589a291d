//! What tracing costs a call (issue 40): the same build with tracing off, sampled at 1 % and at
//! 100 %, exporting to the tests' own OTLP collector (tests/telemetry/collector.py in its `sink`
//! mode: it answers at once and only counts, so it takes little of the CPU measured), compared by
//! bench/ab.mjs's paired CPU ratio: the three configurations in one run, taking turns, each
//! round's CPU per call over the tracing-off one's in the same round. The targets: off
//! costs nothing measurable (it is the baseline here: an absent `telemetry`), 100 % costs at most
//! 10 % CPU per call. A figure, not a timed assertion in the tests.
//!
//!   node bench/tracing.mjs [build dir]     (build-bench by default; `npm run bench` builds it)
//!   TRACING_ROUNDS=8 TRACING_SECONDS=5 TRACING_ENCODING=json node bench/tracing.mjs
//!   AB_TOGETHER=1 node bench/tracing.mjs   (the three loaded at once: steadier on a drifting host)
//!   TRACING_BASELINE=build-pre node bench/tracing.mjs   (a build from before tracing, first: what
//!                                           tracing off costs; every ratio is then over it)
//!
//! `npm run bench` runs it after the peers (BENCH_TRACING=0 skips it).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root } from '../scripts/setup.mjs';
import { startCollector } from '../tests/telemetry/collector.mjs';
import { paired } from './paired.mjs';

/** The configurations compared, by name: the bench's own, plus a `telemetry` section or not. */
export const SAMPLINGS = { off: undefined, '1 %': 0.01, '100 %': 1 };

/** Runs bench/ab.mjs on `dir` with each sampling; resolves to its rows with their paired ratio. */
export async function tracing({ dir = join(root, 'build-bench'), baseline = process.env.TRACING_BASELINE, rounds = Number(process.env.TRACING_ROUNDS ?? 6), seconds = Number(process.env.TRACING_SECONDS ?? 3), encoding = process.env.TRACING_ENCODING ?? 'protobuf' } = {}) {
  const collector = await startCollector({ mode: 'sink' });
  try {
    const base = JSON.parse(readFileSync(join(root, 'bench', 'mcp-edge.bench.json'), 'utf8'));
    const configs = join(mkdtempSync(join(tmpdir(), 'mcp-edge-tracing-bench-')));
    const targets = Object.entries(SAMPLINGS).map(([name, ratio], i) => {
      const config = ratio === undefined ? base : { ...base, telemetry: { otlp: { endpoint: collector.endpoint, encoding }, traces: { sampleRatio: ratio } } };
      const file = join(configs, `${i}.json`);
      writeFileSync(file, JSON.stringify(config));
      return { name, ratio, target: `${dir}=${file}` };
    });
    if (baseline) {
      const file = join(configs, 'baseline.json');
      writeFileSync(file, JSON.stringify(base));
      targets.unshift({ name: 'before tracing', ratio: undefined, target: `${isAbsolute(baseline) ? baseline : join(root, baseline)}=${file}` });
    }
    const rows = (await paired(targets, { rounds, seconds })).map(({ name, ...row }) => ({ sampling: name, ...row }));
    const { sunk } = await collector.received();
    return { rows, encoding, rounds, seconds, exports: sunk.exports, exportedBytes: sunk.bytes };
  } finally {
    await collector.close();
  }
}

export function tracingTable(result) {
  return [
    `Tracing's cost (bench/tracing.mjs): CPU per call with tracing off, sampled at 1 % and at 100 %, OTLP ${result.encoding} to a collector that only counts (${result.exports} exports, ${result.exportedBytes} bytes), ${result.rounds} paired rounds of ${result.seconds} s (bench/ab.mjs).`,
    '',
    `| tracing | CPU µs/call (rounds) | ÷ ${result.rows[0].sampling} (median of paired rounds) | req/s | bad replies |`,
    '|---|---|---|---|---|',
    ...result.rows.map((r) => `| ${r.sampling} | ${r.us_per_call} (${r.us_rounds.join(', ')}) | ${r.ratio_to_first.toFixed(3)} | ${r.rps} | ${r.bad} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2];
  const dir = arg ? (isAbsolute(arg) ? arg : join(root, arg)) : undefined;
  const result = await tracing({ dir });
  // bench/ab.mjs's own lines too: its instructions per call, where perf can count them.
  for (const row of result.rows) console.log(row.line);
  console.log(tracingTable(result));
}
