//! The prebuilt Worker as workerd loads it through Miniflare: its modules, with the configuration
//! as the `mcp-edge-config` module the build leaves unresolved (src/edge/config.js), and its
//! compatibility date. `mcp-edge check` and the repository's tests, bench and conformance runs
//! (scripts/miniflare.mjs) load it the same way.
import { join } from 'node:path';

/** The Worker's compatibility date; keep in step with wrangler.toml and the starter's. */
export const COMPATIBILITY_DATE = '2026-04-01';

/** Its compatibility flags, likewise: `enable_request_signal` makes a request's abort signal
 *  fire when its client goes away, which the session objects' streams watch. */
export const COMPATIBILITY_FLAGS = ['enable_request_signal'];

/** The Worker built in `dir`, configured by the text `config` (the file's own text). */
export function workerModules(dir, config) {
  return [
    { type: 'ESModule', path: join(dir, 'index.js') },
    { type: 'CompiledWasm', path: join(dir, 'index_bg.wasm') },
    { type: 'Text', path: join(dir, 'mcp-edge-config'), contents: config },
  ];
}
