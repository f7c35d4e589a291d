//! wrangler.toml for another configuration file than mcp-edge.json: `npm start` with
//! MCP_EDGE_CONFIG, and the tests. wrangler takes the file from the toml's alias (its `--alias`
//! flag is ignored by `wrangler deploy` 4.86), and watches it under `wrangler dev` only if
//! watch_dir lists it, so the toml is written anew under .mcp-edge/.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root } from './setup.mjs';

/**
 * wrangler.toml with the configuration file swapped for `config`, written under .mcp-edge/ (and,
 * with `build: false`, without its build command: wrangler then bundles build/ as it is and reloads
 * the Worker when a file it bundles changes, the configuration among them):
 * the alias that names it and the watch list that reloads it are paths in the toml, and
 * wrangler takes no flag for the second. Each replaced line must be there as written. (The build
 * command runs in wrangler's working directory, the repository, as it does for wrangler.toml.)
 */
export function wranglerConfigFor(config, { build = true } = {}) {
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
    if (!out.includes(from)) throw new Error(`wrangler.toml has no line ${from}: scripts/wrangler-config.mjs needs it`);
    out = out.replace(from, to);
  }
  if (!build) {
    // `npm start` builds and watches the Rust sources itself (scripts/start.mjs): wrangler 4.86
    // runs a custom build again as soon as its watcher is ready, and says a file changed.
    const section = /^\[build\]\n(?:#.*\n)*command = .*\nwatch_dir = .*\n/m;
    if (!section.test(out)) throw new Error('wrangler.toml has no [build] section of a command and a watch_dir: scripts/wrangler-config.mjs needs it');
    out = out.replace(section, '');
  }
  mkdirSync(dir, { recursive: true });
  // One file per configuration: tests that serve different ones run side by side.
  const file = join(dir, `wrangler-${createHash('sha256').update(config).digest('hex').slice(0, 12)}${build ? '' : '-served'}.toml`);
  writeFileSync(file, `# Written by scripts/wrangler-config.mjs from wrangler.toml, for ${config}.\n${out}`);
  return file;
}

