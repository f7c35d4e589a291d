//! Code mode against the two other ways of serving a large API (issue 44), on GitHub's REST
//! description (npm @octokit/openapi, 1,221 tools) behind Prism's mock, which validates every
//! request that reaches it. One ten-step task: find the open issues labelled "bug" in a
//! repository, then triage the oldest (read it and its comments, comment, label it, react, read
//! its events, read it again). No model runs here: three scripted clients, each the official SDK
//! client following its mode's documented use, do the task:
//!
//!   - plain list: `tools/list` (every page) once, then one `tools/call` per step;
//!   - catalog: per step `search_tools`, `describe_tool` on the tool found, `call_tool` (a tool
//!     already described is not described again);
//!   - code mode: `search` for the tools the task needs, then one `execute` whose program does
//!     all ten steps.
//!
//! Model-visible tokens (o200k_base via gpt-tokenizer, an estimate for any model) count what a
//! model reads and writes: the tool listing, each call it makes (name and arguments, the program
//! text included) and each result's content. Round trips are the tool calls the model makes.
//! Every request that reaches Prism is checked valid.
//!
//! Then the cost of `execute` (Miniflare, one workerd, wrk over 4 sessions in interleaved
//! rounds; CPU per call from /proc): a direct `tools/call echo`, an `execute` whose program makes
//! that one call, and an `execute` that returns a constant (a new isolate's start, no inner
//! call). Ratios are of one run.
//!
//!   node bench/codemode.mjs [build dir]   (build/ by default; `npm run bench` passes build-bench)
//!   CODEMODE_ROUNDS=5 CODEMODE_SECONDS=3   the execute-cost rounds; CODEMODE_COST=0 skips them
//!   CODEMODE_MODES=list,catalog,code,code-untyped   the task's modes (code-untyped: code mode
//!                                        on an import without output schemas); empty skips it
//!
//! `npm run bench` runs both after the cache's (BENCH_CODEMODE=0 skips them).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { root } from '../scripts/setup.mjs';
import { serveWorker } from '../scripts/miniflare.mjs';
import { importOpenApi } from '../cli/openapi/import.mjs';
import { github, installFixtures, tokenizer } from '../tests/openapi/fixtures.mjs';
import { onceMore, secretsOf, startPrism } from '../tests/openapi/harness.mjs';
import { childPids } from './proc.mjs';
import { cpuNs, median } from './startup.mjs';
import { demoUpstream, openSessions, wrk } from './load.mjs';

const scratch = join(root, '.mcp-edge', 'bench-codemode');
const OWNER = 'octocat';
const REPO = 'Hello-World';
const COMMENT = 'Triage: this is the oldest open bug; taking a look.';

/**
 * The task's ten steps: the tool, what a model would search for to find it, and its arguments
 * from what the steps before found (`s`: `oldest`, the oldest open bug's number).
 */
export const STEPS = [
  { tool: 'repos_get', query: 'get a repository', args: () => ({ owner: OWNER, repo: REPO }) },
  { tool: 'issues_get-label', query: 'get a label', args: () => ({ owner: OWNER, repo: REPO, name: 'bug' }) },
  { tool: 'issues_list-for-repo', query: 'list repository issues', args: () => ({ owner: OWNER, repo: REPO, state: 'open', labels: 'bug', sort: 'created', direction: 'asc', per_page: 100 }) },
  { tool: 'issues_get', query: 'get an issue', args: (s) => ({ owner: OWNER, repo: REPO, issue_number: s.oldest }) },
  { tool: 'issues_list-comments', query: 'list issue comments', args: (s) => ({ owner: OWNER, repo: REPO, issue_number: s.oldest }) },
  { tool: 'issues_create-comment', query: 'create an issue comment', args: (s) => ({ owner: OWNER, repo: REPO, issue_number: s.oldest, body: COMMENT }) },
  { tool: 'issues_add-labels', query: 'add labels to an issue', args: (s) => ({ owner: OWNER, repo: REPO, issue_number: s.oldest, body: { labels: ['triage'] } }) },
  { tool: 'reactions_create-for-issue', query: 'create reaction for an issue', args: (s) => ({ owner: OWNER, repo: REPO, issue_number: s.oldest, content: 'eyes' }) },
  { tool: 'issues_list-events', query: 'list issue events', args: (s) => ({ owner: OWNER, repo: REPO, issue_number: s.oldest }) },
  { tool: 'issues_get', query: 'get an issue', args: (s) => ({ owner: OWNER, repo: REPO, issue_number: s.oldest }) },
];

/**
 * Tools whose example replies in GitHub's own description (what Prism answers with) leave out
 * properties their schemas require (`language`, `assignee`): imported without an outputSchema,
 * in every mode alike, as `--no-output-schema` would, so the replies are passed on unchecked.
 */
const UNFIT = ['repos_get', 'issues_get'];

/** What a step's result says, as a model reads it: the structured result, else the text's JSON. */
function valueOf(result) {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const text = result.content?.find((c) => c.type === 'text')?.text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The oldest open issue of a list-for-repo result (GitHub's list, or an object holding it). */
function oldestOf(value) {
  const list = Array.isArray(value) ? value : Object.values(value ?? {}).find(Array.isArray);
  if (!list?.length) throw new Error(`no issues in ${JSON.stringify(value).slice(0, 200)}`);
  return [...list].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)))[0].number;
}

/** What Prism found wrong with a request (not warnings, not its own made-up reply). */
const requestErrors = (r) => r.violations.filter((v) => v.severity !== 'Warning' && v.location?.[0] !== 'response');

/** The calls that find and describe tools, in catalog and code mode. */
const DISCOVERY = ['search_tools', 'describe_tool', 'search'];

/** A scripted model's ledger: its calls, and the tokens of everything it reads and writes. */
class Ledger {
  constructor(encode, client, prism) {
    Object.assign(this, { encode, client, prism, calls: 0, listed: 0, written: 0, read: 0, found: 0, requests: 0, invalid: [] });
  }

  /** The listing the model is given (every page). */
  async list() {
    const tools = [];
    let cursor;
    do {
      const page = await this.client.listTools(cursor ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    this.listed += this.encode(JSON.stringify({ tools })).length;
    return tools;
  }

  /** One tool call the model makes: its request written, its result's content read. */
  async call(name, args) {
    const before = this.prism.requests.length;
    this.calls++;
    this.written += this.encode(JSON.stringify({ name, arguments: args })).length;
    const result = await this.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    const read = this.encode(result.content.map((c) => (c.type === 'text' ? c.text : JSON.stringify(c))).join('\n')).length;
    this.read += read;
    // What the model read to find and learn tools, apart from what the tools answered.
    if (DISCOVERY.includes(name)) this.found += read;
    const made = this.prism.requests.slice(before);
    this.requests += made.length;
    for (const r of made) if (requestErrors(r).length || r.status >= 400) this.invalid.push({ tool: name, request: `${r.method} ${r.url}`, status: r.status, violations: requestErrors(r) });
    if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content).slice(0, 1000)}`);
    return result;
  }

  row(mode) {
    return { mode, roundTrips: this.calls, listed: this.listed, written: this.written, read: this.read, found: this.found, total: this.listed + this.written + this.read, requests: this.requests, invalid: this.invalid };
  }
}

/** (a) plain list: the whole listing once, then a call per step. */
async function plainList(ledger) {
  const tools = await ledger.list();
  const state = {};
  for (const step of STEPS) {
    if (!tools.some((t) => t.name === step.tool)) throw new Error(`${step.tool} is not listed`);
    const result = await ledger.call(step.tool, step.args(state));
    if (step.tool === 'issues_list-for-repo') state.oldest = oldestOf(valueOf(result));
  }
  return ledger.row('plain list (`tools/list`, then `tools/call` per step)');
}

/** (b) catalog: search, describe (once per tool), call, as its tools' descriptions say. */
async function catalog(ledger) {
  await ledger.list();
  const state = {};
  const described = new Set();
  for (const step of STEPS) {
    if (!described.has(step.tool)) {
      const found = valueOf(await ledger.call('search_tools', { query: step.query }));
      const names = found.tools.map((t) => t.name);
      if (!names.includes(step.tool)) throw new Error(`search_tools "${step.query}" did not find ${step.tool}: ${names.join(', ')}`);
      await ledger.call('describe_tool', { name: step.tool });
      described.add(step.tool);
    }
    const result = await ledger.call('call_tool', { name: step.tool, arguments: step.args(state) });
    if (step.tool === 'issues_list-for-repo') state.oldest = oldestOf(valueOf(result));
  }
  return ledger.row('catalog (`search_tools`, `describe_tool`, `call_tool` per step)');
}

/**
 * (c) code mode: `search` until every tool the task needs is declared, then one `execute` whose
 * program does the ten steps, as the model would write it from the declarations.
 */
export const PROGRAM = `const owner = ${JSON.stringify(OWNER)}, repo = ${JSON.stringify(REPO)};
const repository = await tools.repos_get({ owner, repo });
const label = await tools["issues_get-label"]({ owner, repo, name: "bug" });
const bugs = await tools["issues_list-for-repo"]({ owner, repo, state: "open", labels: "bug", sort: "created", direction: "asc", per_page: 100 });
const oldest = [...bugs].sort((a, b) => a.created_at.localeCompare(b.created_at))[0];
const issue_number = oldest.number;
const issue = await tools.issues_get({ owner, repo, issue_number });
const comments = await tools["issues_list-comments"]({ owner, repo, issue_number });
const comment = await tools["issues_create-comment"]({ owner, repo, issue_number, body: ${JSON.stringify(COMMENT)} });
await tools["issues_add-labels"]({ owner, repo, issue_number, body: { labels: ["triage"] } });
await tools["reactions_create-for-issue"]({ owner, repo, issue_number, content: "eyes" });
const events = await tools["issues_list-events"]({ owner, repo, issue_number });
const after = await tools.issues_get({ owner, repo, issue_number });
return { repository: repository.full_name, label: label.name, openBugs: bugs.length, oldest: { number: issue_number, title: issue.title ?? oldest.title, comments: comments.length }, comment: comment.html_url, events: events.length, labels: (after.labels ?? oldest.labels).map((l) => (typeof l === "string" ? l : l.name)) };`;

/**
 * The searches code mode makes: the catalog client's words for each tool the task needs, each
 * with a small limit, since every match comes back as a whole declaration (the tool it is after
 * is among the first three of each).
 */
export const CODE_SEARCHES = [...new Set(STEPS.map((s) => s.query))].map((query) => ({ query, limit: 3 }));

async function codeMode(ledger, label = 'code mode (`search`, then one `execute`)') {
  const tools = await ledger.list();
  if (tools.map((t) => t.name).join() !== 'search,execute') throw new Error(`code mode lists ${tools.map((t) => t.name)}`);
  const declared = new Set();
  for (const search of CODE_SEARCHES) for (const name of valueOf(await ledger.call('search', search)).tools) declared.add(name);
  const missing = [...new Set(STEPS.map((s) => s.tool))].filter((t) => !declared.has(t));
  if (missing.length) throw new Error(`code mode's searches did not declare ${missing.join(', ')}`);
  const result = await ledger.call('execute', { code: PROGRAM });
  return { ...ledger.row(label), answer: valueOf(result) };
}

/** Serves `file` with the build in `dir`; the SDK client connected to its one server. */
async function served(dir, file, parsed) {
  const mf = serveWorker({ dir, config: file, bindings: secretsOf(parsed) });
  const client = new Client({ name: 'codemode-bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', await mf.ready), { fetch: onceMore }));
  return { client, stop: async () => (await client.close(), await mf.dispose()) };
}

/** The ten-step task in each mode; `modes` chooses (code mode needs the core's code mode). */
export async function codeModeTask({ dir = join(root, 'build'), modes = ['list', 'catalog', 'code', 'code-untyped'] } = {}) {
  installFixtures();
  mkdirSync(scratch, { recursive: true });
  const { encode } = await import(pathToFileURL(join(tokenizer, 'esm', 'encoding', 'o200k_base.js')).href).catch(() => import(pathToFileURL(join(tokenizer, 'esm', 'main.js')).href));
  const prism = await startPrism(github);
  const rows = [];
  try {
    const drivers = {
      list: [plainList, {}],
      catalog: [catalog, { catalog: true }],
      code: [codeMode, { code: true }],
      // The same, imported with --no-output-schema: declarations without result types, which
      // make most of what code mode's searches cost.
      'code-untyped': [(ledger) => codeMode(ledger, 'code mode, imported with `--no-output-schema`'), { code: true, outputSchema: false }],
    };
    for (const mode of modes) {
      const [drive, options] = drivers[mode];
      const { config } = await importOpenApi(github, { server: 'github', baseUrl: prism.url, ...options });
      for (const tool of config.servers[0].tools) if (UNFIT.includes(tool.name)) delete tool.outputSchema;
      const file = join(scratch, `github-${mode}.json`);
      writeFileSync(file, JSON.stringify(config));
      const server = await served(dir, file, config);
      try {
        rows.push(await drive(new Ledger(encode, server.client, prism)));
      } finally {
        await server.stop();
      }
    }
  } finally {
    await prism.stop();
  }
  return { rows, steps: STEPS.map((s) => s.tool), program: PROGRAM };
}

const n = (x) => x.toLocaleString('en');

export function codeModeTable({ rows, steps }) {
  return [
    `The ten-step task on GitHub's description (1,221 tools) behind Prism's mock (bench/codemode.mjs): ${steps.join(', ')}. Tokens by o200k_base; round trips are the tool calls the model makes; every request Prism saw was valid unless counted.`,
    '',
    '| mode | round trips | listing tokens | tokens written (calls, program) | tokens read (results) | of which searches and descriptions | total tokens | requests to the API | invalid |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.mode} | ${r.roundTrips} | ${n(r.listed)} | ${n(r.written)} | ${n(r.read)} | ${n(r.found)} | ${n(r.total)} | ${r.requests} | ${r.invalid.length} |`),
  ].join('\n');
}

/** The configuration of the execute-cost rounds: the bench's echo tool on a listed server at
 *  /mcp and on a code-mode server at /code/mcp, in one Worker. */
function costConfig() {
  const echo = { name: 'echo', description: 'Echoes a message through the upstream.', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }, outputSchema: { type: 'object', properties: { message: { type: 'string' } } }, http: { url: '{+env.UPSTREAM_URL}/echo' } };
  return {
    log: 'failures',
    servers: [
      { route: '/mcp', name: 'listed', version: '1.0.0', privateUpstreams: ['127.0.0.1'], tools: [echo] },
      { route: '/code/mcp', name: 'code', version: '1.0.0', privateUpstreams: ['127.0.0.1'], toolDiscovery: 'code', tools: [echo] },
    ],
  };
}

const call = (name, args) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

/** What each compared call sends, where, and the text its reply must hold. */
export const COST_CALLS = [
  { name: 'direct `tools/call echo`', path: '/mcp', body: call('echo', { message: 'bench-echo' }), check: 'bench-echo' },
  { name: '`execute`: one inner `echo` call', path: '/code/mcp', body: call('execute', { code: 'return await tools.echo({ message: "bench-echo" });' }), check: 'bench-echo' },
  { name: '`execute`: a constant (the isolate alone)', path: '/code/mcp', body: call('execute', { code: 'return "bench-constant";' }), check: 'bench-constant' },
];

/**
 * CPU per call of each of COST_CALLS, in interleaved rounds on one workerd. workerd 1.20260426
 * ended under a sustained stream of Dynamic Workers ("tried to defer destruction during isolate
 * shutdown", once in a few thousand executes) while src/edge/code/run.js disposed each
 * program's entrypoint stub; not in 15,000 executes since it stopped. Should it end again, the
 * round it ends in is dropped, a fresh workerd is warmed up and the rounds go on (at most
 * `restarts` times), and the report counts the ends.
 */
export async function executeCost({ dir = join(root, 'build'), rounds = Number(process.env.CODEMODE_ROUNDS ?? 5), seconds = Number(process.env.CODEMODE_SECONDS ?? 3), connections = 4, restarts = 4 } = {}) {
  mkdirSync(scratch, { recursive: true });
  const file = join(scratch, 'execute-cost.json');
  writeFileSync(file, JSON.stringify(costConfig()));
  const upstream = await demoUpstream();
  const kinds = COST_CALLS.map((c) => ({ ...c, rounds: [] }));
  const crashes = [];
  let executes = 0;
  let instance;
  /** A fresh workerd, its sessions opened and warmed up (JIT, isolates, the sessions' objects). */
  const start = async () => {
    const before = new Set(childPids(process.pid, 'workerd'));
    // workerd's own output, kept for the report should it end.
    const output = [];
    const keep = (stream) => stream.on('data', (d) => output.push(String(d)) > 200 && output.shift());
    const mf = serveWorker({ dir, config: file, bindings: { UPSTREAM_URL: upstream.url }, handleRuntimeStdio: (stdout, stderr) => (keep(stdout), keep(stderr)) });
    const base = await mf.ready;
    for (const k of kinds) {
      k.url = new URL(k.path, base);
      k.sessions = await openSessions(k.url, connections);
    }
    for (const k of kinds) await wrk(k.url, { sessions: k.sessions, connections, seconds: 1, body: k.body, check: k.check });
    // This instance's workerd: of the ones new since it started, the one that served (an earlier
    // instance's, disposed but not yet gone, may be listed too).
    const cpuOf = (p) => (existsSync(`/proc/${p}/task`) ? cpuNs(p) : 0);
    const pid = childPids(process.pid, 'workerd').filter((p) => !before.has(p)).sort((a, b) => cpuOf(b) - cpuOf(a))[0];
    return { mf, pid, output, alive: () => existsSync(`/proc/${pid}/task`) };
  };
  try {
    instance = await start();
    for (let round = 0; round < rounds; ) {
      const done = [];
      for (const k of kinds) {
        const cpu = instance.alive() ? cpuNs(instance.pid) : undefined;
        const r = await wrk(k.url, { sessions: k.sessions, connections, seconds, body: k.body, check: k.check });
        if (cpu === undefined || !instance.alive()) break;
        if (k.path !== '/mcp') executes += r.requests;
        done.push({ us: (cpuNs(instance.pid) - cpu) / 1e3 / Math.max(1, r.requests), rps: r.requests / (r.duration_us / 1e6), p50: r.p50_us / 1000, bad: r.mismatches + r.non2xx });
      }
      if (done.length === kinds.length) {
        // Only whole rounds count: each round's ratios pair its own figures.
        for (const [i, figures] of done.entries()) kinds[i].rounds.push(figures);
        round++;
        continue;
      }
      crashes.push({ executes, output: instance.output.join('').trim().split('\n')[0].slice(0, 300) });
      await instance.mf.dispose().catch(() => {});
      if (crashes.length > restarts) break;
      instance = await start();
    }
  } finally {
    await instance?.mf.dispose().catch(() => {});
    upstream.close();
  }
  const whole = kinds[0].rounds.length;
  const rows = whole ? kinds.map((k) => ({ name: k.name, us: median(k.rounds.map((r) => r.us)), usRounds: k.rounds.map((r) => Math.round(r.us)), rps: median(k.rounds.map((r) => r.rps)), p50: median(k.rounds.map((r) => r.p50)), bad: k.rounds.reduce((n, r) => n + r.bad, 0) })) : [];
  // Each round's ratio over the direct call of the same round, then their median.
  for (const [i, row] of rows.entries()) row.ratio = median(kinds[i].rounds.map((r, j) => r.us / kinds[0].rounds[j].us));
  return { rows, rounds: whole, seconds, connections, executes, crashes };
}

export function executeCostTable(result) {
  return [
    `The cost of \`execute\` (bench/codemode.mjs): CPU per call of workerd (/proc), ${result.rounds} interleaved rounds of ${result.seconds} s over ${result.connections} sessions each (wrk), medians; the ratio is each round's over the direct call's in the same round, their median.`,
    '',
    '| call | CPU µs/call (rounds) | ÷ direct call | req/s | p50 ms | bad replies |',
    '|---|---|---|---|---|---|',
    ...result.rows.map((r) => `| ${r.name} | ${Math.round(r.us)} (${r.usRounds.join(', ')}) | ${r.ratio.toFixed(2)} | ${Math.round(r.rps)} | ${r.p50.toFixed(2)} | ${r.bad} |`),
    ...(result.crashes.length ? ['', `workerd ended ${result.crashes.length} time${result.crashes.length > 1 ? 's' : ''} in ${result.executes.toLocaleString('en')} executes (after ${result.crashes.map((c) => c.executes.toLocaleString('en')).join(', ')} of them; each time a fresh one was warmed up and the round run again): ${result.crashes[0].output || '(no output)'}`] : []),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ? join(process.cwd(), process.argv[2]) : undefined;
  const modes = (process.env.CODEMODE_MODES ?? 'list,catalog,code,code-untyped').split(',').filter(Boolean);
  if (modes.length) {
    const task = await codeModeTask({ dir, modes });
    console.log(codeModeTable(task));
    if (task.rows.find((r) => r.answer)) console.log(`\nThe program's answer: ${JSON.stringify(task.rows.find((r) => r.answer).answer)}`);
  }
  if (process.env.CODEMODE_COST !== '0') console.log(`\n${executeCostTable(await executeCost({ dir }))}`);
}
