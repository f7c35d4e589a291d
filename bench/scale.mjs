//! Scale: mcp-edge (the bench build and configuration) with 5,000 sessions open, calls spread
//! over all of them for a minute, against the same load over 16 sessions in the same run; then a
//! configuration of 1,000 tools, whose `tools/list` and `tools/call` are measured beside the bench
//! configuration's. Reports throughput, p50/p99, CPU per request and workerd's resident memory
//! (and its growth per open session).
//!
//!   node bench/scale.mjs          SCALE_SESSIONS (5000), SCALE_SECONDS (60), SCALE_CONNECTIONS (16),
//!                                 SCALE_CONFIG (bench/mcp-edge.bench.json: another configuration,
//!                                 e.g. with a longer `sessions.leaseMs`), SCALE_TOOLS=0 (skips the
//!                                 1,000 tools)
//!
//! `npm run bench` runs it too (BENCH_SCALE=0 skips it) and adds its tables.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root, setup } from '../scripts/setup.mjs';
import { build } from '../scripts/build.mjs';
import { serveWorker } from '../scripts/miniflare.mjs';
import { demoHandler } from '../examples/default/upstream.mjs';
import { childPids, cpuSeconds, rssMiB } from './proc.mjs';
import { demoUpstream, openSessions, wrk } from './load.mjs';
import { manyTools } from './startup.mjs';

/** A workerd serving `config`; resolves to its URL and pid. */
async function serve(dir, config, upstreamUrl) {
  const before = new Set(childPids(process.pid, 'workerd'));
  // workerd's own errors, counted by their first line: the table says why replies failed.
  const errors = new Map();
  const handleRuntimeStdio = (stdout, stderr) => {
    stdout.resume();
    let rest = '';
    stderr.setEncoding('utf8').on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines.filter((l) => /error/i.test(l) && !/^\s*stack:/.test(l))) {
        const key = line.replace(/reference = \w+/, 'reference = …').slice(0, 200);
        errors.set(key, (errors.get(key) ?? 0) + 1);
      }
    });
  };
  const mf = serveWorker({ dir, config, bindings: { UPSTREAM_URL: upstreamUrl }, handleRuntimeStdio });
  const base = new URL(await mf.ready);
  return { mf, base, errors, pid: childPids(process.pid, 'workerd').find((p) => !before.has(p)) };
}

/** workerd's commonest error line so far, with its count, or nothing. */
function commonest(errors) {
  const [line, count] = [...errors].sort((a, b) => b[1] - a[1])[0] ?? [];
  return line ? { line, count } : undefined;
}

/** One measured load: req/s, latency, CPU per request, and how many replies were wrong. */
async function measure(instance, url, load) {
  const cpu = cpuSeconds(instance.pid);
  const r = await wrk(url, load);
  const spent = cpuSeconds(instance.pid) - cpu;
  return {
    rps: Math.round(r.requests / (r.duration_us / 1e6)),
    p50_ms: r.p50_us / 1000,
    p99_ms: r.p99_us / 1000,
    cpu_ms_per_request: Number(((spent * 1000) / r.requests).toFixed(3)),
    rss_mib: Number(rssMiB(instance.pid).toFixed(1)),
    bad: r.non2xx + r.mismatches + r.socket_errors,
  };
}

/** The upstream of both configurations: the demo's `/echo`, and `/endpoint/<n>/<city>` for the
 *  1,000 tools, which answers a small JSON object. */
function startUpstream() {
  return demoUpstream((req, res) => {
    if (req.url.startsWith('/endpoint/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ endpoint: req.url }));
    } else {
      demoHandler(req, res);
    }
  });
}

export async function scale({ dir, sessions = Number(process.env.SCALE_SESSIONS ?? 5000), seconds = Number(process.env.SCALE_SECONDS ?? 60), connections = Number(process.env.SCALE_CONNECTIONS ?? 16) }) {
  const upstream = await startUpstream();
  try {
    return await measureAll({ dir, upstreamUrl: upstream.url, sessions, seconds, connections });
  } finally {
    upstream.close();
  }
}

async function measureAll({ dir, upstreamUrl, sessions, seconds, connections }) {
  const results = {};
  const bench = join(root, 'bench', 'mcp-edge.bench.json');
  const edge = await serve(dir, process.env.SCALE_CONFIG ?? bench, upstreamUrl);
  try {
    const url = new URL('/mcp', edge.base);
    const few = await openSessions(url, 16);
    await wrk(url, { sessions: few, connections, seconds: 5 });
    results.few = { sessions: 16, ...(await measure(edge, url, { sessions: few, connections, seconds })) };
    const before = rssMiB(edge.pid);
    const opened = Date.now();
    const many = await openSessions(url, sessions);
    const openSeconds = (Date.now() - opened) / 1000;
    const after = rssMiB(edge.pid);
    results.many = { sessions, open_seconds: Number(openSeconds.toFixed(1)), rss_growth_kib_per_session: Number((((after - before) * 1024) / sessions).toFixed(1)), ...(await measure(edge, url, { sessions: many, connections, seconds })) };
    results.many.ratio_to_few = Number((results.many.rps / results.few.rps).toFixed(2));
    results.many.runtime_error = commonest(edge.errors);
  } finally {
    await edge.mf.dispose();
  }
  if (process.env.SCALE_TOOLS === '0') return results;
  // 1,000 tools beside the bench configuration's two: what listing and calling cost.
  mkdirSync(join(root, '.mcp-edge', 'scale'), { recursive: true });
  const file = join(root, '.mcp-edge', 'scale', '1000-tools.json');
  writeFileSync(file, JSON.stringify(manyTools(1000)));
  const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const callTool = (name) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: name === 'echo' ? { message: 'bench-echo' } : { city: 'Paris', limit: 5 } } });
  results.tools = [];
  for (const [label, config, tool, check] of [['bench configuration (2 tools)', bench, 'echo', '"message":"bench-echo"'], ['1,000 tools', file, 'tool_500', '/endpoint/500/Paris']]) {
    const instance = await serve(dir, config, upstreamUrl);
    try {
      const url = new URL('/mcp', instance.base);
      const ids = await openSessions(url, connections);
      await wrk(url, { sessions: ids, connections, seconds: 3, body: list, check: '"tools"' });
      const listed = await measure(instance, url, { sessions: ids, connections, seconds: Math.min(seconds, 15), body: list, check: '"tools"' });
      const called = await measure(instance, url, { sessions: ids, connections, seconds: Math.min(seconds, 15), body: callTool(tool), check });
      results.tools.push({ config: label, list: listed, call: called });
    } finally {
      await instance.mf.dispose();
    }
  }
  return results;
}

/** The scale tables, as `npm run bench` prints them. */
export function scaleTables(r) {
  const row = (label, m) => `| ${label} | ${m.rps} | ${m.p50_ms} | ${m.p99_ms} | ${m.cpu_ms_per_request} | ${m.rss_mib} | ${m.bad} |`;
  return [
    `Scale: ${r.many.sessions.toLocaleString('en')} sessions opened (in ${r.many.open_seconds} s), then \`tools/call\` spread over all of them, beside the same load over 16 (wrk, 1 thread, 16 connections). ${r.many.sessions.toLocaleString('en')} ÷ 16 sessions: ${r.many.ratio_to_few} of the throughput; workerd's memory grew ${r.many.rss_growth_kib_per_session} KiB per open session.`,
    '',
    '| sessions | req/s | p50 ms | p99 ms | CPU ms/request | RSS MiB | bad replies |',
    '|---|---|---|---|---|---|---|',
    row('16', r.few),
    row(r.many.sessions.toLocaleString('en'), r.many),
    ...(r.many.bad && r.many.runtime_error ? ['', `workerd's commonest error meanwhile (${r.many.runtime_error.count} times): \`${r.many.runtime_error.line}\``] : []),
    // SCALE_TOOLS=0 measured no 1,000 tools.
    ...(r.tools ? toolsTable(r.tools, row) : []),
  ].join('\n');
}

/** The 1,000 tools' rows beside the bench configuration's. */
function toolsTable(tools, row) {
  return [
    '',
    'A configuration of 1,000 tools (each with a schema and a templated URL) beside the bench configuration: `tools/list` (every tool, one page) and `tools/call` of one tool.',
    '',
    '| configuration | request | req/s | p50 ms | p99 ms | CPU ms/request | RSS MiB | bad replies |',
    '|---|---|---|---|---|---|---|---|',
    ...tools.flatMap((t) => [`| ${t.config} | tools/list |${row('', t.list).slice(4)}`, `| ${t.config} | tools/call |${row('', t.call).slice(4)}`]),
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  console.log(scaleTables(await scale({ dir: build({ outDir: 'build-bench' }) })));
}
