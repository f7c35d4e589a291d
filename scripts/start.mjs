//! `npm start`: installs what is missing, builds the release worker, starts the demo upstream,
//! and serves MCP with `wrangler dev` on http://127.0.0.1:${PORT:-8787}/mcp.
//!
//! The configuration is mcp-edge.json, or the file MCP_EDGE_CONFIG names. wrangler reloads the
//! Worker when it is saved (no cargo run), and rebuilds the wasm when a Rust source changes.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { root, setup } from './setup.mjs';
import { build } from './build.mjs';
import { startDemoUpstream } from '../examples/default/upstream.mjs';

/**
 * wrangler.toml with the configuration file swapped for `config`, written under .mcp-edge/:
 * the alias that names it and the watch list that reloads it are paths in the toml, and
 * wrangler takes no flag for the second. Each replaced line must be there as written. (The build
 * command runs in wrangler's working directory, the repository, as it does for wrangler.toml.)
 */
export function devConfig(config) {
  const toml = readFileSync(join(root, 'wrangler.toml'), 'utf8');
  const dir = join(root, '.mcp-edge');
  // wrangler joins watch_dir to the toml's folder, absolute or not.
  const watched = relative(dir, config);
  const edits = [
    ['main = "build/index.js"', 'main = "../build/index.js"'],
    ['"mcp-edge-config" = "./mcp-edge.json"', `"mcp-edge-config" = ${JSON.stringify(config)}`],
    ['watch_dir = ["src", "mcp-edge.json"]', `watch_dir = ["../src", ${JSON.stringify(watched)}]`],
  ];
  let out = toml;
  for (const [from, to] of edits) {
    if (!out.includes(from)) throw new Error(`wrangler.toml has no line ${from}: scripts/start.mjs needs it`);
    out = out.replace(from, to);
  }
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'wrangler.toml');
  writeFileSync(file, `# Written by scripts/start.mjs from wrangler.toml, for ${config}.\n${out}`);
  return file;
}

setup();
build();
const config = resolve(process.env.MCP_EDGE_CONFIG ?? join(root, 'mcp-edge.json'));
const port = Number(process.env.PORT || 8787);
const upstreamPort = Number(process.env.DEMO_UPSTREAM_PORT || 8788);
const upstream = await startDemoUpstream(upstreamPort);
console.error(`[start] demo upstream on http://127.0.0.1:${upstreamPort}`);

const wrangler = spawn(
  join(root, 'node_modules', '.bin', 'wrangler'),
  ['dev', '--config', devConfig(config), '--ip', '127.0.0.1', '--port', String(port), '--var', `DEMO_UPSTREAM_URL:http://127.0.0.1:${upstreamPort}`, '--show-interactive-dev-session=false'],
  { cwd: root, stdio: 'inherit', env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } },
);
console.error(`[start] MCP on http://127.0.0.1:${port}/mcp, configured by ${config}`);
const stop = () => wrangler.kill('SIGTERM');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
wrangler.on('exit', (code) => {
  upstream.close();
  process.exit(code ?? 0);
});
