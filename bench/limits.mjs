//! What a rate limit costs a call (issue 41): the bench's configuration with no `rateLimits`,
//! against the same with one rate limit per principal on the bench's tool (high enough never to
//! refuse: every call is counted, none is turned away), compared by bench/ab.mjs's paired CPU
//! ratio: the two configurations in one run, taking turns, each round's CPU per call over the
//! unlimited one's in the same round. The budget is 5 %. A figure, not a timed assertion.
//!
//!   node bench/limits.mjs [build dir]      (build-bench by default; `npm run bench` builds it)
//!   LIMITS_ROUNDS=8 LIMITS_SECONDS=5 node bench/limits.mjs
//!
//! `npm run bench` runs it after tracing's cost (BENCH_LIMITS=0 skips it).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root } from '../scripts/setup.mjs';

/** The limit the limited configuration puts on every server of the bench's. */
export const LIMIT = { name: 'bench', per: ['principal'], rate: { perSecond: 1000000, burst: 1000000 } };

export async function limits({ dir = join(root, 'build-bench'), rounds = Number(process.env.LIMITS_ROUNDS ?? 6), seconds = Number(process.env.LIMITS_SECONDS ?? 3) } = {}) {
  const base = JSON.parse(readFileSync(join(root, 'bench', 'mcp-edge.bench.json'), 'utf8'));
  const limited = { ...base, servers: base.servers.map((s) => ({ ...s, rateLimits: [LIMIT] })) };
  const configs = mkdtempSync(join(tmpdir(), 'mcp-edge-limits-bench-'));
  const targets = [['none', base], ['one rate limit', limited]].map(([name, config], i) => {
    const file = join(configs, `${i}.json`);
    writeFileSync(file, JSON.stringify(config));
    return { name, target: `${dir}=${file}` };
  });
  const output = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bench', 'ab.mjs'), ...targets.map((t) => t.target)], {
      env: { ...process.env, AB_ROUNDS: String(rounds), AB_SECONDS: String(seconds) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`bench/ab.mjs exited with ${code}: ${out}`))));
  });
  const rows = targets.map((t) => {
    const line = output.split('\n').find((l) => l.startsWith(`${t.target}:`));
    if (!line) throw new Error(`bench/ab.mjs printed no line for ${t.name}: ${output}`);
    return {
      limits: t.name,
      us_per_call: Number(/: (\d+) µs CPU per call/.exec(line)?.[1]),
      us_rounds: (/µs CPU per call \(rounds ([\d ]+)\)/.exec(line)?.[1] ?? '').split(' ').filter(Boolean).map(Number),
      ratio_to_first: Number(/, ([0-9.]+)× the first's/.exec(line)?.[1] ?? 1),
      rps: Number(/, (\d+) req\/s/.exec(line)?.[1]),
      bad: Number(/, (\d+) bad replies/.exec(line)?.[1]),
      line,
    };
  });
  return { rows, rounds, seconds };
}

export function limitsTable(result) {
  return [
    `A rate limit's cost (bench/limits.mjs): CPU per call with no rateLimits and with one rate limit per principal (every call counted in its Durable Object), ${result.rounds} paired rounds of ${result.seconds} s (bench/ab.mjs). Budget: 5 %.`,
    '',
    `| rateLimits | CPU µs/call (rounds) | ÷ none (median of paired rounds) | req/s | bad replies |`,
    '|---|---|---|---|---|',
    ...result.rows.map((r) => `| ${r.limits} | ${r.us_per_call} (${r.us_rounds.join(', ')}) | ${r.ratio_to_first.toFixed(3)} | ${r.rps} | ${r.bad} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2];
  const dir = arg ? (isAbsolute(arg) ? arg : join(root, arg)) : undefined;
  const result = await limits({ dir });
  for (const row of result.rows) console.log(row.line);
  console.log(limitsTable(result));
}
