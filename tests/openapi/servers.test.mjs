// Server URLs that are not absolute, on real documents and hostile ones. Imported from a URL, a
// relative server URL resolves against the document's own URL (OpenAPI says so); from a file, a
// scheme-relative one (`//host/path`) gets https, and a relative one (or none) makes the base URL
// a variable to set, with a note, rather than a refusal. Other schemes are refused; a private
// or metadata address is imported, but the configuration loads only once the user lists it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importOpenApi } from '../../cli/openapi/import.mjs';
import { check } from '../../cli/check.mjs';
import { root } from '../../scripts/setup.mjs';
import { directory } from './fixtures.mjs';

/** APIs.guru documents whose server URL is relative, scheme-relative or missing: each refused before. */
const REAL = [
  ['amentum.space/global-magnet.json', '{+env.API_BASE_URL}', '"/wmm"'],
  ['britbox.co.uk.json', '{+env.API_BASE_URL}', '"/api"'],
  ['apache.org/airflow.json', '{+env.API_BASE_URL}', '"/api/v1"'],
  ['docker.com/engine.json', '{+env.API_BASE_URL}', '"/v1.33"'],
  ['adobe.com/aem.json', '{+env.API_BASE_URL}', '"/"'],
  ['bhagavadgita.io.json', '{+env.API_BASE_URL}', '"/" (it names none)'],
  ['ato.gov.au.json', 'https://api.abr.ato.gov.au/'],
  ['biapi.pro.json', 'https://budgea.biapi.pro/2.0'],
  ['europeana.eu.json', 'https://api.europeana.eu/'],
  ['nba.com.json', 'https://stats.nba.com/stats'],
];

test('real documents with relative, scheme-relative or no server URLs import, and their configurations check', async () => {
  for (const [name, base, said] of REAL) {
    const r = await importOpenApi(join(directory, name), { server: 'api', connections: false });
    assert.ok(r.added.length > 0, name);
    for (const tool of r.added) assert.ok(tool.http.url.startsWith(base.replace(/\/$/, '')), `${name}: ${tool.http.url}`);
    if (said) {
      assert.equal(r.notes.filter((n) => n.startsWith("the document's server URL")).length, 1, name);
      assert.ok(r.notes[0].startsWith(`the document's server URL ${said} is relative to where the document is served, which a file does not say: set API_BASE_URL to the API's base URL`), `${name}: ${r.notes[0]}`);
    } else {
      assert.equal(r.notes.some((n) => n.startsWith("the document's server URL")), false, name);
    }
    const { ok, report } = await check(name, JSON.stringify(r.config), join(root, 'build'));
    assert.ok(ok, `${name}: ${report}`);
  }
});

const doc = (url, extra = {}) => JSON.stringify({
  openapi: '3.0.3',
  info: { title: 'Served', version: '1' },
  ...(url === undefined ? {} : { servers: [{ url }] }),
  paths: { '/ping': { get: { operationId: 'ping', responses: { 200: { description: 'ok' } } } } },
  ...extra,
});

/** Serves `documents` (path → text) on 127.0.0.1 while `run(base)` runs. */
async function serving(documents, run) {
  const server = createServer((req, res) => {
    const text = documents[req.url];
    if (text === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await run(`http://127.0.0.1:${server.address().port}`);
  } finally {
    server.close();
  }
}

test("from a URL, a relative server URL resolves against the document's own", async () => {
  await serving({
    '/specs/v2/abs-path.json': doc('/api'),
    '/specs/v2/rel-path.json': doc('rest/'),
    '/specs/v2/none.json': doc(undefined),
    '/specs/v2/scheme-relative.json': doc('//api.example.com/x'),
  }, async (base) => {
    const url = async (name) => (await importOpenApi(`${base}/specs/v2/${name}`, { server: 's' })).added[0].http.url;
    assert.equal(await url('abs-path.json'), `${base}/api/ping`);
    assert.equal(await url('rel-path.json'), `${base}/specs/v2/rest/ping`);
    assert.equal(await url('none.json'), `${base}/ping`);
    // Against the document's URL, a scheme-relative one takes the document's scheme.
    assert.equal(await url('scheme-relative.json'), 'http://api.example.com/x/ping');
    const r = await importOpenApi(`${base}/specs/v2/abs-path.json`, { server: 's' });
    assert.deepEqual(r.server.privateUpstreams, ['127.0.0.1']);
    assert.deepEqual(r.notes, []);
  });
});

test('from a file: scheme-relative gets https, relative becomes a variable with a note, --base-url still wins', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'mcp-edge-servers-'));
  const file = (name, text) => {
    const path = join(folder, name);
    writeFileSync(path, text);
    return path;
  };
  const scheme = await importOpenApi(file('scheme.json', doc('//api.example.com/v1')), {});
  assert.equal(scheme.added[0].http.url, 'https://api.example.com/v1/ping');
  const relative = await importOpenApi(file('relative.json', doc('/api')), { server: 'My Shop', secretPrefix: 'SHOP' });
  assert.equal(relative.added[0].http.url, '{+env.SHOP_BASE_URL}/ping');
  assert.match(relative.notes[0], /set SHOP_BASE_URL to the API's base URL \(npx wrangler secret put SHOP_BASE_URL, or \[vars\] in wrangler\.toml; for dev, SHOP_BASE_URL=https:\/\/… in \.dev\.vars\), or import again with --base-url$/);
  assert.equal(relative.server.privateUpstreams, undefined);
  const given = await importOpenApi(file('given.json', doc('/api')), { baseUrl: 'https://shop.example.com/api' });
  assert.equal(given.added[0].http.url, 'https://shop.example.com/api/ping');
  assert.deepEqual(given.notes, []);
});

test('hostile server URLs: other schemes are refused; a private or metadata address does not load unless listed', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'mcp-edge-servers-'));
  for (const url of ['javascript:alert(1)', 'file:///etc/passwd', 'data:text/plain,x', 'ftp://files.example.com/']) {
    const path = join(folder, 'hostile.json');
    writeFileSync(path, doc(url));
    await assert.rejects(importOpenApi(path, {}), { message: `the document's server URL ${JSON.stringify(url)} is not http or https: pass --base-url` });
  }
  // Served from a URL: a scheme it names is refused the same way, not resolved.
  await serving({ '/a.json': doc('javascript:alert(1)') }, async (base) => {
    await assert.rejects(importOpenApi(`${base}/a.json`, {}), /is not http or https: pass --base-url/);
  });
  // The cloud metadata address or a private network's, named by a document: the configuration
  // the import writes would not load (the command refuses to write it), unless the user lists
  // the host in privateUpstreams.
  for (const [url, host] of [['//169.254.169.254/latest', '169.254.169.254'], ['http://10.0.0.5/api', '10.0.0.5']]) {
    const path = join(folder, 'private.json');
    writeFileSync(path, doc(url));
    const r = await importOpenApi(path, { server: 'meta' });
    assert.equal(r.server.privateUpstreams, undefined);
    const { ok, report } = await check('private.json', JSON.stringify(r.config), join(root, 'build'));
    assert.equal(ok, false, url);
    assert.match(report, new RegExp(`upstream host ${host.replace(/\./g, '\\.')} .*privateUpstreams`), url);
  }
});
