//! `npm start`: installs what is missing, builds the release worker, starts the demo upstream,
//! and serves MCP with `wrangler dev` on http://127.0.0.1:${PORT:-8787}/mcp.
//!
//! The configuration is mcp-edge.json, or the file MCP_EDGE_CONFIG names. wrangler reloads the
//! Worker when it is saved (no cargo run); this script rebuilds the wasm when a file under src/
//! changes, and wrangler reloads the Worker it built.
//! Arguments after `--` go to wrangler dev: `npm start -- --var NAME:value`. wrangler serves a
//! copy of the configuration with its MCP Apps' template files read in (a Worker reads no files),
//! written anew when the file or one of its templates is saved (docs/apps.md).
//! `ADMIN_TOKEN=… npm start` turns the admin API on: the token reaches the Worker as the secret
//! MCP_EDGE_ADMIN_TOKEN, through an env file only this user can read (wrangler prints a --var's
//! value in its banner, and any user sees a process's arguments).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, watch, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { root, setup } from './setup.mjs';
import { build, optimized } from './build.mjs';
import { wranglerConfigFor } from './wrangler-config.mjs';
import { startDemoUpstream } from '../examples/default/upstream.mjs';
import { keepInlined } from '../cli/apps.mjs';

setup();
// A first start serves before wasm-opt's pass (about 2 minutes of the first start on 2 cores):
// the Worker as rustc and wasm-bindgen built it, until the optimized one, built behind it,
// replaces it and wrangler reloads.
build({ optimize: false });
const config = resolve(process.env.MCP_EDGE_CONFIG ?? join(root, 'mcp-edge.json'));

/** The file wrangler serves: a copy of `config` under .mcp-edge/ with its apps' templates read
 *  in, kept in step with the file and its templates (a template added while `npm start` runs is
 *  read in too). */
function served(config) {
  mkdirSync(join(root, '.mcp-edge'), { recursive: true });
  const copy = join(root, '.mcp-edge', `served-${createHash('sha256').update(config).digest('hex').slice(0, 12)}.json`);
  keepInlined(config, copy);
  return copy;
}
const port = Number(process.env.PORT || 8787);
const upstreamPort = Number(process.env.DEMO_UPSTREAM_PORT || 8788);
const upstream = await startDemoUpstream(upstreamPort);
console.error(`[start] demo upstream on http://127.0.0.1:${upstreamPort}`);

const secrets = [];
// The Worker refuses a key shorter than this (src/keys.rs MIN_KEY_CHARS): say so before it starts.
if (process.env.ADMIN_TOKEN && [...process.env.ADMIN_TOKEN].length < 32) {
  console.error(`[start] ADMIN_TOKEN is ${[...process.env.ADMIN_TOKEN].length} characters long; it must have at least 32 (for example: ADMIN_TOKEN=$(openssl rand -hex 32) npm start)`);
  process.exit(1);
}
if (process.env.ADMIN_TOKEN) {
  const file = join(root, '.mcp-edge', 'admin.env');
  mkdirSync(join(root, '.mcp-edge'), { recursive: true });
  writeFileSync(file, `MCP_EDGE_ADMIN_TOKEN=${JSON.stringify(process.env.ADMIN_TOKEN)}\n`, { mode: 0o600 });
  secrets.push('--env-file', file);
  console.error('[start] the admin API is on: /admin/api takes Authorization: Bearer $ADMIN_TOKEN, and the console\'s "Admin sign-in" takes the token');
}

/**
 * Rebuilds the Worker (scripts/build.mjs, in its own process) when a file under src/ changes, and
 * at once when `first` says why (a first start, served before wasm-opt's pass, gets that pass);
 * wrangler then reloads what it serves from build/. Here rather than wrangler.toml's build
 * command: wrangler 4.86 runs that command again as soon as its file watcher is ready, and
 * prints that a file changed when none did.
 */
function rebuildOnEdit(first) {
  let timer = null;
  let building = null;
  let again = false;
  const rebuild = () => {
    if (building) {
      again = true;
      return;
    }
    building = spawn(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
    building.on('exit', (code) => {
      building = null;
      if (code !== 0) console.error('[start] the build failed: the Worker served is the last one built');
      if (again) {
        again = false;
        rebuild();
      }
    });
  };
  if (first) {
    console.error(`[start] ${first}`);
    rebuild();
  }
  watch(join(root, 'src'), { recursive: true }, (_event, file) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      console.error(`[start] src/${file} changed: rebuilding the Worker`);
      rebuild();
    }, 200);
  });
}
rebuildOnEdit(optimized() ? null : 'serving the Worker before wasm-opt\'s pass, which runs now: wrangler reloads the smaller module when it is done');

const wrangler = spawn(
  join(root, 'node_modules', '.bin', 'wrangler'),
  [
    'dev', '--config', wranglerConfigFor(served(config), { build: false }), '--ip', '127.0.0.1', '--port', String(port), '--var', `DEMO_UPSTREAM_URL:http://127.0.0.1:${upstreamPort}`,
    // Local: the DNS-rebinding Host check applies whatever a request claims (src/policy.rs).
    '--var', 'MCP_EDGE_LOCAL:1', '--show-interactive-dev-session=false',
    ...secrets,
    // `npm start -- --var NAME:value`: more arguments for wrangler dev.
    ...process.argv.slice(2),
  ],
  // CLOUDFLARE_CF_FETCH_ENABLED=false: Miniflare gives requests its placeholder `request.cf`
  // rather than fetching Cloudflare's (a machine without that route printed a stack trace at
  // each start).
  { cwd: root, stdio: 'inherit', env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' } },
);
console.error(`[start] MCP on http://127.0.0.1:${port}/mcp, configured by ${config}`);
console.error(`[start] the console: http://127.0.0.1:${port}/${process.env.ADMIN_TOKEN ? '' : ' (to change tools live from it: ADMIN_TOKEN=<a long random value> npm start)'}`);
const stop = () => wrangler.kill('SIGTERM');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
wrangler.on('exit', (code) => {
  upstream.close();
  process.exit(code ?? 0);
});
