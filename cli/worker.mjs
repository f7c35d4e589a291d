//! The prebuilt Worker as workerd loads it through Miniflare: its modules, with the configuration
//! as the `mcp-edge-config` module the build leaves unresolved (src/edge/config.js), and its
//! compatibility date. `mcp-edge check` and the repository's tests, bench and conformance runs
//! (scripts/miniflare.mjs) load it the same way.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';

/** The Worker's compatibility date; keep in step with wrangler.toml and the starter's. */
export const COMPATIBILITY_DATE = '2026-04-01';

/** Its compatibility flags, likewise: `enable_request_signal` makes a request's abort signal
 *  fire when its client goes away, which the session objects' streams watch. */
export const COMPATIBILITY_FLAGS = ['enable_request_signal'];

/** Reads and drops workerd's output: an unread pipe fills up (one log line per request) and then
 *  blocks workerd itself. */
export function drain(stdout, stderr) {
  stdout.resume();
  stderr.resume();
}

/** The Worker built in `dir`, configured by the text `config` (the file's own text), with code
 *  mode's sandbox as the module it imports at its first program (builds before issue 45's last
 *  stop bundled it into index.js). */
export function workerModules(dir, config) {
  return [
    { type: 'ESModule', path: join(dir, 'index.js') },
    { type: 'CompiledWasm', path: join(dir, 'index_bg.wasm') },
    ...(existsSync(join(dir, 'codemode.js')) ? [{ type: 'ESModule', path: join(dir, 'codemode.js') }] : []),
    { type: 'Text', path: join(dir, 'mcp-edge-config'), contents: config },
  ];
}

/**
 * workerd running the Worker built in `dir` behind `entry`, a module of its own (the source text,
 * served as `name`) that imports the Worker's exports from './index.js': how `mcp-edge check` and
 * the tests call the module's exports directly. The deployment's configuration is an empty one.
 */
export function behind(dir, name, entry) {
  return new Miniflare({
    modulesRoot: dir,
    modules: [{ type: 'ESModule', path: join(dir, name), contents: entry }, ...workerModules(dir, '{}')],
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: COMPATIBILITY_FLAGS,
    host: '127.0.0.1',
    handleRuntimeStdio: drain,
  });
}
