// MCP Apps (io.modelcontextprotocol/ui) through mcp-edge, with real parts: the official example
// server @modelcontextprotocol/server-basic-vanillajs (installed under .mcp-edge/apps/ at a
// pinned version) and a second app server of the test's own that names the same ui:// URI,
// both upstreams of one mcp-edge; a tool of the configuration whose app is a template
// (examples/apps/table.html) rendering a webhook's reply. The official SDK client, declaring the
// extension or not; then the extension's own host bridge (AppBridge, from
// @modelcontextprotocol/ext-apps) in Chromium, connected to mcp-edge with the official client,
// running each app in a sandboxed iframe, and the example app's own tool call round-tripping.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { root, startMiniflare } from './harness.mjs';
import { freePort } from './mcp_servers.mjs';
import { inlineApps } from '../../cli/apps.mjs';
import { launchBrowser, screenshot } from '../oauth/browser.mjs';

const EXTENSION = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';
const dir = join(root, '.mcp-edge', 'apps');
const PACKAGES = { '@modelcontextprotocol/ext-apps': '2.0.4', '@modelcontextprotocol/server-basic-vanillajs': '2.0.3' };

/** The example server and the extension, installed once under .mcp-edge/apps/ (pinned). */
function installApps() {
  const stamp = join(dir, 'installed.json');
  const want = JSON.stringify(PACKAGES);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: PACKAGES }, null, 2));
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`installing the MCP Apps fixtures: ${r.stderr || r.stdout}`);
  writeFileSync(stamp, want);
}
const modules = join(dir, 'node_modules', '@modelcontextprotocol');

/** The official example server on `port`; resolves once it answers. */
async function startBasic(port) {
  const child = spawn(process.execPath, [join(modules, 'server-basic-vanillajs', 'dist', 'index.js')], { env: { ...process.env, PORT: String(port) }, stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    if (await fetch(`http://127.0.0.1:${port}/mcp`).then(() => true, () => false)) return { url: `http://127.0.0.1:${port}/mcp`, close: () => child.kill() };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('the example server did not start');
}

/** A second app server: the same ui:// URI as the example's, a CSP, permissions, an app-only
 *  tool. Answers JSON-RPC as JSON; records the URIs it is asked to read. */
async function startPalette() {
  const reads = [];
  const resource = {
    uri: 'ui://get-time/mcp-app.html',
    name: 'palette',
    mimeType: MIME,
    _meta: { ui: { csp: { connectDomains: ['https://api.example.com'], resourceDomains: ['https://cdn.example.com'] }, permissions: { clipboardWrite: {} }, domain: 'palette.example.com', prefersBorder: true } },
  };
  const html = '<!doctype html><html><body><h1 id="palette">Palette</h1><script>window.parent.postMessage({jsonrpc:"2.0",id:1,method:"ui/initialize",params:{protocolVersion:"2026-01-26",appInfo:{name:"palette",version:"1"},appCapabilities:{}}},"*");</script></body></html>';
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const m = JSON.parse(body || '{}');
    if (!('id' in m)) return res.writeHead(req.method === 'DELETE' ? 200 : 202).end();
    const answer = (result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
    switch (m.method) {
      case 'initialize':
        return answer({ protocolVersion: '2025-11-25', capabilities: { tools: {}, resources: {} }, serverInfo: { name: 'palette', version: '1' } });
      case 'tools/list':
        return answer({ tools: [
          { name: 'palette', inputSchema: { type: 'object' }, _meta: { ui: { resourceUri: resource.uri }, 'ui/resourceUri': resource.uri } },
          { name: 'refresh', inputSchema: { type: 'object' }, _meta: { ui: { resourceUri: resource.uri, visibility: ['app'] } } },
        ] });
      case 'resources/list':
        return answer({ resources: [resource] });
      case 'resources/templates/list':
        return answer({ resourceTemplates: [] });
      case 'resources/read':
        reads.push(m.params.uri);
        if (m.params.uri !== resource.uri) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32002, message: 'Resource not found' } }));
        return answer({ contents: [{ uri: resource.uri, mimeType: MIME, text: html, _meta: resource._meta }] });
      case 'tools/call':
        return answer({ content: [{ type: 'text', text: `${m.params.name} ran` }] });
      default:
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } }));
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/mcp`, reads, close: () => server.close() };
}

/** The webhook behind the configured tool: a JSON array. */
async function startWebhook() {
  const rows = [{ city: 'Lisbon', temperature: 21 }, { city: 'Oslo', temperature: 4 }, { city: 'Quito', temperature: 17 }];
  const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(rows)));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/rows`, rows, close: () => server.close() };
}

let basic;
let palette;
let webhook;
let worker;
let mcpUrl;
let configDir;
before(async () => {
  installApps();
  basic = await startBasic(await freePort());
  palette = await startPalette();
  webhook = await startWebhook();
  configDir = mkdtempSync(join(tmpdir(), 'mcp-edge-apps-'));
  mkdirSync(join(configDir, 'apps'));
  copyFileSync(join(root, 'examples', 'apps', 'table.html'), join(configDir, 'apps', 'table.html'));
  const config = {
    servers: [{
      route: '/mcp',
      name: 'gateway',
      version: '1',
      privateUpstreams: ['127.0.0.1'],
      tools: [{ name: 'weather', description: 'Weather by city', http: { method: 'GET', url: webhook.url }, app: { template: 'apps/table.html' } }],
      upstreams: [
        { name: 'basic', url: basic.url, prefix: 'basic_' },
        { name: 'palette', url: palette.url, prefix: 'pal_' },
      ],
    }],
  };
  const file = join(configDir, 'mcp-edge.json');
  writeFileSync(file, JSON.stringify(config));
  worker = await startMiniflare({ config: file });
  mcpUrl = new URL('/mcp', worker.url);
});

after(async () => {
  await worker?.mf.dispose();
  basic?.close();
  palette?.close();
  webhook?.close();
});

async function connect(declares, url = mcpUrl) {
  const capabilities = declares ? { extensions: { [EXTENSION]: { mimeTypes: [MIME] } } } : {};
  const client = new Client({ name: 'apps-test', version: '1' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

test('a client that declares the extension sees each upstream app under its own name, CSP unchanged', async () => {
  const client = await connect(true);
  try {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(byName['basic_get-time']._meta.ui.resourceUri, 'ui://basic/get-time/mcp-app.html');
    assert.equal(byName['basic_get-time']._meta['ui/resourceUri'], 'ui://basic/get-time/mcp-app.html', 'the legacy key too');
    assert.equal(byName.pal_palette._meta.ui.resourceUri, 'ui://palette/get-time/mcp-app.html', 'the same upstream URI, another name');
    assert.deepEqual(byName.pal_refresh._meta.ui.visibility, ['app'], 'an app-only tool is listed to a host');
    assert.equal(byName.weather._meta.ui.resourceUri, 'ui://gateway/weather');
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri).sort();
    assert.deepEqual(uris, ['ui://basic/get-time/mcp-app.html', 'ui://gateway/weather', 'ui://palette/get-time/mcp-app.html']);
    const listed = resources.find((r) => r.uri === 'ui://palette/get-time/mcp-app.html');
    assert.deepEqual(listed._meta, { ui: { csp: { connectDomains: ['https://api.example.com'], resourceDomains: ['https://cdn.example.com'] }, permissions: { clipboardWrite: {} }, domain: 'palette.example.com', prefersBorder: true } });

    const read = await client.readResource({ uri: 'ui://palette/get-time/mcp-app.html' });
    assert.equal(read.contents[0].uri, 'ui://palette/get-time/mcp-app.html', 'read back under our name');
    assert.deepEqual(read.contents[0]._meta, listed._meta, 'the CSP and permissions as the upstream wrote them');
    assert.equal(palette.reads.at(-1), 'ui://get-time/mcp-app.html', 'the upstream read its own URI');
    const example = await client.readResource({ uri: 'ui://basic/get-time/mcp-app.html' });
    assert.equal(example.contents[0].uri, 'ui://basic/get-time/mcp-app.html');
    assert.equal(example.contents[0].mimeType, MIME);
    assert.match(example.contents[0].text, /get-time-btn/);
    const own = await client.readResource({ uri: 'ui://gateway/weather' });
    assert.equal(own.contents[0].mimeType, MIME);
    assert.deepEqual(own.contents[0]._meta.ui.csp, { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] }, 'a strict CSP');
    assert.doesNotMatch(own.contents[0].text, /<script[^>]+src=/, 'no external script');

    // An app's own call names its upstream's tool: routed back there.
    const time = await client.callTool({ name: 'get-time', arguments: {} });
    assert.match(time.structuredContent.time, /^\d{4}-\d\d-\d\dT/);
    assert.equal((await client.callTool({ name: 'refresh', arguments: {} })).content[0].text, 'refresh ran');
  } finally {
    await client.close();
  }
});

test('a client without the extension sees no app, and cannot read one', async () => {
  const client = await connect(false);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'basic_get-time') && tools.some((t) => t.name === 'weather'), 'the tools stay, their text results too');
    assert.ok(tools.every((t) => !t._meta?.ui && !t._meta?.['ui/resourceUri']), JSON.stringify(tools));
    assert.ok(!tools.some((t) => t.name === 'pal_refresh'), 'an app-only tool is not offered to a model');
    const { resources } = await client.listResources();
    assert.deepEqual(resources.filter((r) => r.uri.startsWith('ui://')), []);
    for (const uri of ['ui://basic/get-time/mcp-app.html', 'ui://gateway/weather']) {
      await assert.rejects(client.readResource({ uri }), /not found/i, uri);
    }
  } finally {
    await client.close();
  }
});

test('hostile ui:// URIs read nothing: another namespace, dot segments, encodings', async () => {
  const client = await connect(true);
  const before = palette.reads.length;
  try {
    for (const uri of [
      'ui://get-time/mcp-app.html', // the upstream's own, unrenamed
      'ui://palette/../basic/get-time/mcp-app.html',
      'ui://palette/%2e%2e/basic/get-time/mcp-app.html',
      'ui://palette%2Fget-time/mcp-app.html',
      'UI://palette/get-time/mcp-app.html',
      'ui://basic/get-time/../../palette/get-time/mcp-app.html',
      'ui://palette/get-time/mcp-app.html?x=1',
      'ui://gateway/weather/../basic_get-time',
    ]) {
      await assert.rejects(client.readResource({ uri }), /not found/i, uri);
    }
    assert.equal(palette.reads.length, before, 'no hostile URI reached an upstream');
  } finally {
    await client.close();
  }
});

test("a template path outside the configuration's folder is refused", () => {
  const text = (template) => JSON.stringify({ servers: [{ name: 's', version: '1', tools: [{ name: 't', http: { url: 'https://x.example' }, app: { template } }] }] });
  const file = join(configDir, 'mcp-edge.json');
  writeFileSync(join(tmpdir(), 'mcp-edge-apps-outside.html'), '<p>outside</p>');
  symlinkSync(join(tmpdir(), 'mcp-edge-apps-outside.html'), join(configDir, 'apps', 'link.html'));
  for (const template of ['../mcp-edge-apps-outside.html', '/etc/passwd', 'apps/../../etc/passwd', 'apps/link.html']) {
    assert.throws(() => inlineApps(text(template), file), /outside the configuration's folder|cannot be read/, template);
  }
  const inlined = JSON.parse(inlineApps(text('apps/table.html'), file));
  assert.match(inlined.servers[0].tools[0].app.html, /ui\/notifications\/tool-result/);
});

/** The host page's script: AppBridge and the official client, bundled for the browser. */
function bundleHost() {
  const entry = join(dir, 'host-entry.mjs');
  writeFileSync(entry, `import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
window.runApp = async (name, args) => {
  const client = new Client({ name: 'test-host', version: '1' }, { capabilities: { extensions: { '${EXTENSION}': { mimeTypes: ['${MIME}'] } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', location.href)));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === name);
  const uri = tool._meta.ui.resourceUri;
  const read = await client.readResource({ uri });
  const iframe = document.createElement('iframe');
  iframe.sandbox = 'allow-scripts';
  iframe.style.cssText = 'width: 760px; height: 360px; border: 1px solid #888';
  iframe.id = 'app';
  document.body.append(iframe);
  const bridge = new AppBridge(client, { name: 'test-host', version: '1' }, { serverTools: {}, serverResources: {}, logging: {} });
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  // The host's CSP from _meta.ui.csp, as the spec has hosts build it: nothing beyond the
  // domains declared (none declared: inline code only, no network).
  const csp = read.contents[0]._meta?.ui?.csp ?? {};
  const list = (domains, none = "'none'") => (domains?.length ? domains.join(' ') : none);
  const resources = list(csp.resourceDomains, '');
  const policy = [
    "default-src 'none'",
    \`script-src 'unsafe-inline' \${resources}\`,
    \`style-src 'unsafe-inline' \${resources}\`,
    \`img-src data: \${resources}\`,
    \`font-src data: \${resources}\`,
    \`connect-src \${list(csp.connectDomains)}\`,
    \`frame-src \${list(csp.frameDomains)}\`,
    \`base-uri \${list(csp.baseUriDomains)}\`,
  ].join('; ');
  const meta = \`<meta http-equiv="Content-Security-Policy" content="\${policy}">\`;
  const html = read.contents[0].text;
  iframe.srcdoc = /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (head) => head + meta) : meta + html;
  window.policies = [...(window.policies ?? []), policy];
  await initialized;
  const result = await client.callTool({ name, arguments: args });
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  return { uri, csp: read.contents[0]._meta?.ui?.csp ?? null, policy, result };
};
`);
  const out = join(dir, 'host.js');
  const r = spawnSync(join(root, 'node_modules', '.bin', 'esbuild'), [entry, '--bundle', '--format=esm', '--platform=browser', `--outfile=${out}`, '--log-level=error'], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`bundling the host page: ${r.stderr}`);
  return readFileSync(out, 'utf8');
}

/** The host page, and mcp-edge behind it on the same origin (the test's Node side passes /mcp on). */
async function startHost(script) {
  const posted = [];
  const server = createServer(async (req, res) => {
    if (req.url === '/') return res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body><h3>test host</h3><script type="module" src="/host.js"></script></body></html>');
    if (req.url === '/host.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'origin', 'connection', 'content-length'].includes(k)));
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const exchange = { request: body ? JSON.parse(body) : null, reply: '' };
    posted.push(exchange);
    try {
      const reply = await fetch(new URL(req.url, worker.url), { method: req.method, headers, body });
      res.writeHead(reply.status, Object.fromEntries([...reply.headers].filter(([k]) => !['content-encoding', 'content-length', 'transfer-encoding'].includes(k))));
      if (reply.body) {
        for await (const chunk of reply.body) {
          exchange.reply += Buffer.from(chunk).toString('utf8');
          res.write(chunk);
        }
      }
    } catch {
      // A stream the browser left, or mcp-edge ended at the test's end.
    }
    res.end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/`, posted, close: () => { server.closeAllConnections(); server.close(); } };
}

test('in Chromium, the host bridge runs both apps through mcp-edge, and the example app calls its tool', async () => {
  const host = await startHost(bundleHost());
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(host.url);
    await page.waitForFunction(() => typeof window.runApp === 'function');

    // The configuration's app: the webhook's rows as a table.
    const own = await page.evaluate(() => window.runApp('weather', {}));
    assert.equal(own.uri, 'ui://gateway/weather');
    assert.match(own.policy, /connect-src 'none'/, 'the strict CSP, applied by the host');
    const table = page.frameLocator('#app');
    await table.locator('td', { hasText: 'Oslo' }).waitFor({ timeout: 15_000 });
    assert.equal(await table.locator('tbody tr').count(), webhook.rows.length);
    assert.deepEqual(await table.locator('th').allTextContents(), ['city', 'temperature']);
    await screenshot(page, 'apps-table');

    // The registry's example app: rendered, then its own button calls get-time through the host.
    await page.evaluate(() => document.getElementById('app').remove());
    const example = await page.evaluate(() => window.runApp('basic_get-time', {}));
    assert.equal(example.uri, 'ui://basic/get-time/mcp-app.html');
    const app = page.frameLocator('#app');
    await app.locator('#get-time-btn').waitFor({ timeout: 15_000 });
    await app.locator('#server-time', { hasText: /\d{4}-\d\d-\d\dT/ }).waitFor({ timeout: 15_000 });
    const shown = await app.locator('#server-time').textContent();
    // The app's own call: `get-time`, its upstream's name, from the iframe through the bridge.
    const appCalls = () => host.posted.filter((e) => e.request?.method === 'tools/call' && e.request.params?.name === 'get-time');
    assert.equal(appCalls().length, 0);
    await new Promise((r) => setTimeout(r, 5));
    await app.locator('#get-time-btn').click();
    await app.locator('#server-time', { hasText: /\d{4}-\d\d-\d\dT/ }).filter({ hasNotText: shown }).waitFor({ timeout: 15_000 });
    assert.equal(appCalls().length, 1, 'one call, through mcp-edge');
    const answered = appCalls()[0].reply.match(/\d{4}-\d\d-\d\dT[\d:.]+Z/)?.[0];
    assert.equal(await app.locator('#server-time').textContent(), answered, "the upstream's time, shown by the app");
    await screenshot(page, 'apps-basic');
  } finally {
    await browser.close();
    host.close();
  }
});
