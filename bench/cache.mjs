//! What a kept result saves (issue 43): the bench's `echo` tool called the same way again and
//! again, uncached, and with its results kept at the edge (`cache.results`, public and per
//! principal), compared by bench/ab.mjs's paired CPU ratio: every call after the first of each
//! entry is answered from the Workers Cache API without the upstream. The hits are read from
//! `/metrics` (`mcp_edge_tool_cache_hits_total`) after the rounds. A figure, not a timed
//! assertion in the tests.
//!
//!   node bench/cache.mjs [build dir]     (build-bench by default; `npm run bench` builds it)
//!   CACHE_ROUNDS=8 CACHE_SECONDS=8 AB_TOGETHER=1 node bench/cache.mjs
//!
//! `npm run bench` runs it after connections' (BENCH_CACHE=0 skips it).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root } from '../scripts/setup.mjs';
import { paired } from './paired.mjs';

const ADMIN = 'bench-admin-token-4e8b1c0f7a2d9365';

/** The configurations compared, by name: the echo tool's `cache` in each. */
export const SETTINGS = {
  uncached: undefined,
  'kept, public': { results: { scope: 'public', ttlMs: 86_400_000 } },
  'kept, per principal': { results: { scope: 'principal', ttlMs: 86_400_000 } },
};

/** bench/ab.mjs's AB_PREPARE hook: no headers of its own. */
export async function prepare() {
  return {};
}

/** bench/ab.mjs's report hook: the calls answered from the cache, as `/metrics` counts them
 *  (the health object is told a second or so after the calls). */
export async function report({ url, calls }) {
  await new Promise((r) => setTimeout(r, 3000));
  const text = await (await fetch(new URL('/metrics', url.origin), { headers: { authorization: `Bearer ${ADMIN}` } })).text();
  const total = (name) => text.split('\n').filter((l) => l.startsWith(name)).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  return { calls, hits: total('mcp_edge_tool_cache_hits_total'), misses: total('mcp_edge_tool_cache_misses_total') };
}

export async function cache({ dir = join(root, 'build-bench'), rounds = Number(process.env.CACHE_ROUNDS ?? 6), seconds = Number(process.env.CACHE_SECONDS ?? 3) } = {}) {
  const base = JSON.parse(readFileSync(join(root, 'bench', 'mcp-edge.bench.json'), 'utf8'));
  const configs = mkdtempSync(join(tmpdir(), 'mcp-edge-cache-bench-'));
  const targets = Object.entries(SETTINGS).map(([name, cached], i) => {
    const file = join(configs, `${i}.json`);
    const tool = (t) => (t.name === 'echo' && cached ? { ...t, cache: cached } : t);
    writeFileSync(file, JSON.stringify({ ...base, servers: base.servers.map((s) => ({ ...s, tools: (s.tools ?? []).map(tool) })) }));
    return { name, target: `${dir}=${file}` };
  });
  const rows = await paired(targets, { rounds, seconds, env: { AB_PREPARE: fileURLToPath(import.meta.url), AB_BINDINGS: JSON.stringify({ MCP_EDGE_ADMIN_TOKEN: ADMIN }) } });
  return { rows: rows.map(({ name, ...row }) => ({ setting: name, ...row })), rounds, seconds };
}

export function cacheTable(result) {
  return [
    `Result caching (bench/cache.mjs): CPU per call of the same echo call, uncached and answered from kept results (\`cache.results\`), ${result.rounds} paired rounds of ${result.seconds} s (bench/ab.mjs); hits and misses from /metrics (warm-up included).`,
    '',
    '| setting | CPU µs/call (rounds) | ÷ uncached (median of paired rounds) | req/s | bad replies | calls | cache hits | misses |',
    '|---|---|---|---|---|---|---|---|',
    ...result.rows.map((r) => `| ${r.setting} | ${r.us_per_call} (${r.us_rounds.join(', ')}) | ${r.ratio_to_first.toFixed(3)} | ${r.rps} | ${r.bad} | ${r.report?.calls ?? ''} | ${r.report?.hits ?? ''} | ${r.report?.misses ?? ''} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ? join(process.cwd(), process.argv[2]) : undefined;
  console.log(cacheTable(await cache({ dir })));
}
