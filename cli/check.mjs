//! `mcp-edge check`: validates a configuration with the Worker's own module, run in workerd
//! through Miniflare, so it needs no Rust and says exactly what the Worker would say: the same
//! code (`config::check`, exported as `check_config`) and the same messages.
import { behind } from './worker.mjs';

// A worker whose one route hands a file to the module's `check_config`.
const ENTRY = `import { check_config } from './index.js';
export default {
  async fetch(request) {
    const { label, text } = await request.json();
    return new Response(check_config(label, text));
  },
};`;

/**
 * Checks the configuration `text`, reported under `label` (its path, as the user wrote it), with
 * the worker built in `buildDir`. Resolves to `{ ok, report }`: the servers' lines, or the fault.
 */
export async function check(label, text, buildDir) {
  // The module imports the deployment's configuration; this run checks one passed to it.
  const mf = behind(buildDir, 'check-entry.mjs', ENTRY);
  try {
    const res = await mf.dispatchFetch('http://check/', { method: 'POST', body: JSON.stringify({ label, text }) });
    const out = await res.text();
    const i = out.indexOf('\n');
    return { ok: out.slice(0, i) === 'ok', report: out.slice(i + 1) };
  } finally {
    await mf.dispose();
  }
}
