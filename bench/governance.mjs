//! What governance costs a plain call (issue 41): the same build with no policy, with one access
//! rule, with one rate limit, and with both, compared by bench/ab.mjs's paired CPU ratio: the
//! configurations in one run, taking turns, each round's CPU per call over the first's in the
//! same round. The budget: a plain call under one policy and one rate limit within 5 %
//! of one under none. A figure, not a timed assertion in the tests.
//!
//! The rule reads the arguments, so it is evaluated on every call (a rule that does not is
//! evaluated too: the gate asks before the call and again with the arguments).
//!
//!   node bench/governance.mjs [build dir]     (build-bench by default; `npm run bench` builds it)
//!   GOVERNANCE_ROUNDS=8 GOVERNANCE_SECONDS=8 AB_TOGETHER=1 node bench/governance.mjs
//!
//! `npm run bench` runs it after tracing's (BENCH_GOVERNANCE=0 skips it).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root } from '../scripts/setup.mjs';
import { paired } from './paired.mjs';

/** One rule that holds for no bench call, reading the caller, the entry and the arguments. */
export const POLICY = { name: 'no shouting', deny: "entry.name == 'echo' && has(args.message) && args.message == 'STOP' && principal.id != ''" };

/** One rate limit per principal on the bench's tool, high enough never to refuse: every call is
 * counted in its Durable Object, none is turned away. */
export const LIMIT = { name: 'bench', per: ['principal'], rate: { perSecond: 1000000, burst: 1000000 } };

/** The configurations compared, by name: each server of the bench's own, with these fields. */
export const SETTINGS = { none: {}, 'one policy': { policies: [POLICY] }, 'one rate limit': { rateLimits: [LIMIT] }, 'one policy and one rate limit': { policies: [POLICY], rateLimits: [LIMIT] } };

/** Runs bench/ab.mjs on `dir` with each setting; resolves to its rows with their paired ratio. */
export async function governance({ dir = join(root, 'build-bench'), settings = SETTINGS, rounds = Number(process.env.GOVERNANCE_ROUNDS ?? 6), seconds = Number(process.env.GOVERNANCE_SECONDS ?? 3) } = {}) {
  const base = JSON.parse(readFileSync(join(root, 'bench', 'mcp-edge.bench.json'), 'utf8'));
  const configs = mkdtempSync(join(tmpdir(), 'mcp-edge-governance-bench-'));
  const targets = Object.entries(settings).map(([name, extra], i) => {
    const file = join(configs, `${i}.json`);
    writeFileSync(file, JSON.stringify({ ...base, servers: base.servers.map((s) => ({ ...s, ...extra })) }));
    return { name, target: `${dir}=${file}` };
  });
  const rows = (await paired(targets, { rounds, seconds })).map(({ name, ...row }) => ({ setting: name, ...row }));
  return { rows, rounds, seconds };
}

export function governanceTable(result) {
  return [
    `Governance's cost (bench/governance.mjs): CPU per call with no policy and with governance on, ${result.rounds} paired rounds of ${result.seconds} s (bench/ab.mjs); budget 5 %.`,
    '',
    '| setting | CPU µs/call (rounds) | ÷ none (median of paired rounds) | req/s | bad replies |',
    '|---|---|---|---|---|',
    ...result.rows.map((r) => `| ${r.setting} | ${r.us_per_call} (${r.us_rounds.join(', ')}) | ${r.ratio_to_first.toFixed(3)} | ${r.rps} | ${r.bad} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ? join(process.cwd(), process.argv[2]) : undefined;
  console.log(governanceTable(await governance({ dir })));
}
