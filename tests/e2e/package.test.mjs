// The release as a new user meets it: dist/mcp-edge-<version>.tgz (`npm run package`, which
// `npm test` runs first) installed into an empty folder, on a PATH with no cargo, rustc or rustup.
// `mcp-edge init`, then `mcp-edge dev`: the official SDK client lists and calls the starter's
// tool, against a real webhook on 127.0.0.1; `mcp-edge doctor` walks it; an edit of
// mcp-edge.json is served without a restart; `mcp-edge check` locates a fault;
// `wrangler deploy --dry-run` bundles the folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { root } from './harness.mjs';
import { freePort, serveWith, toolNamesWhen } from './serving.mjs';

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const tarball = join(root, 'dist', `mcp-edge-${version}.tgz`);

/** PATH without any folder that holds a Rust tool, and with this Node's own folder first. */
function pathWithoutRust() {
  const rusty = (dir) => ['cargo', 'rustc', 'rustup'].some((tool) => existsSync(join(dir, tool)));
  return [dirname(process.execPath), ...process.env.PATH.split(delimiter)].filter((dir) => dir && !rusty(dir)).join(delimiter);
}

/** A webhook such as n8n's: it answers a POSTed question with JSON, and keeps what it got. */
async function startWebhook() {
  const received = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ method: req.method, url: req.url, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answer: `the workflow read: ${JSON.parse(body || '{}').question ?? ''}` }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, received, close: () => server.close() };
}

const TODO_API = `openapi: 3.1.0
info: {title: Todo, version: 1.0.0}
servers: [{url: 'https://todo.example.com/v1'}]
security: [{token: []}]
components:
  securitySchemes:
    token: {type: http, scheme: bearer}
paths:
  /todos:
    get:
      operationId: listTodos
      parameters: [{name: done, in: query, schema: {type: boolean}}]
      responses: {'200': {description: ok}}
  /todos/{id}:
    get:
      operationId: getTodo
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses: {'200': {description: ok}}
`;

test('the package: installed without Rust, init, dev, doctor, a live edit, check, import-openapi, and a deploy dry run', { timeout: 600_000 }, async () => {
  assert.ok(existsSync(tarball), `${tarball} is missing: npm test packs it first`);
  const env = { ...process.env, PATH: pathWithoutRust(), WRANGLER_SEND_METRICS: 'false', CI: 'true' };
  delete env.npm_config_prefix;
  for (const tool of ['cargo', 'rustc', 'rustup']) {
    assert.notEqual(spawnSync('sh', ['-c', `command -v ${tool}`], { env }).status, 0, `${tool} is still on the PATH`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-user-'));
  const sh = (cmd, args, options = {}) => spawnSync(cmd, args, { cwd: dir, env, encoding: 'utf8', ...options });

  const install = sh('npm', ['install', '--no-audit', '--no-fund', tarball]);
  assert.equal(install.status, 0, install.stderr);
  const bin = join(dir, 'node_modules', '.bin', 'mcp-edge');
  assert.equal(sh(bin, ['--version']).stdout.trim(), version);

  const init = sh(bin, ['init']);
  assert.equal(init.status, 0, init.stderr);
  for (const f of ['package.json', 'wrangler.toml', 'mcp-edge.json', 'README.md', '.gitignore', '.dev.vars']) {
    assert.ok(existsSync(join(dir, f)), `init wrote ${f}`);
  }
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  assert.match(pkg.dependencies['mcp-edge'], /mcp-edge-.*\.tgz$/, 'the installed spec is kept');
  assert.equal(pkg.scripts.dev, 'mcp-edge dev');
  const again = sh(bin, ['init']);
  assert.match(again.stdout, /kept mcp-edge\.json \(it exists\)/);
  // A folder whose packages are not installed yet is told so, before wrangler starts.
  const bare = mkdtempSync(join(tmpdir(), 'mcp-edge-bare-'));
  writeFileSync(join(bare, 'wrangler.toml'), readFileSync(join(dir, 'wrangler.toml')));
  const early = sh(bin, ['dev'], { cwd: bare });
  assert.equal(early.status, 1);
  assert.match(early.stderr, /wrangler\.toml's main, node_modules\/mcp-edge\/build\/index\.js, is missing: run `npm install`/);

  // As a user with n8n on their own machine: the webhook's URL is a secret, and the private
  // address must be allowed by name.
  const webhook = await startWebhook();
  const configFile = join(dir, 'mcp-edge.json');
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  assert.equal(config.servers[0].tools[0].name, 'ask_my_workflow');
  config.servers[0].privateUpstreams = ['127.0.0.1'];
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  writeFileSync(join(dir, '.dev.vars'), `WEBHOOK_URL=${webhook.url}/webhook/ask\n`);

  const check = sh(bin, ['check']);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(check.stdout, 'mcp-edge.json: ok: my-mcp-server 0.1.0 on /mcp and /stream: tools ask_my_workflow\n');
  writeFileSync(join(dir, 'broken.json'), JSON.stringify({ servers: [{ name: 's', version: '1', tools: [{ name: 'w', inputSchema: { type: 'object', properties: { city: { type: 'string' } } }, http: { url: 'https://api.example.com/{cty}' } }] }] }));
  const broken = sh(bin, ['check', 'broken.json']);
  assert.equal(broken.status, 1);
  assert.equal(broken.stderr, 'broken.json: servers[0].tools[0].http.url: unknown argument "cty" in template\n');

  const url = new URL(`http://127.0.0.1:${await freePort()}/mcp`);
  // Its own inspector port: wrangler's default, 9229, may be another test's wrangler dev.
  const dev = await serveWith(bin, ['dev', '--port', url.port, '--inspector-port', String(await freePort())], { cwd: dir, env }, url);
  try {
    const client = new Client({ name: 'new-user', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['ask_my_workflow']);
    const result = await client.callTool({ name: 'ask_my_workflow', arguments: { question: 'is it on?' } });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { answer: 'the workflow read: is it on?' });
    assert.deepEqual(webhook.received.at(-1), { method: 'POST', url: '/webhook/ask', body: '{"question":"is it on?"}' });
    await client.close();

    // The doctor ships in the package too: the dev server needs no sign-in, so the OAuth steps
    // are skipped, and its one tool requires an argument, so no call is made. Browser origins
    // are not allowed in dev. Run without blocking: this process serves the webhook and reads
    // wrangler's output.
    const doctor = await new Promise((resolve) => {
      const child = spawn(bin, ['doctor', url.href, '--origins', '', '--json'], { cwd: dir, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
    assert.equal(doctor.status, 0, doctor.stdout + doctor.stderr);
    const diagnosis = JSON.parse(doctor.stdout);
    assert.equal(diagnosis.steps.find((s) => s.id === 'tools-list').detail, '1 tool: ask_my_workflow');
    assert.equal(sh(bin, ['doctor']).status, 2, 'a usage error');

    // The user's own tool, added while `mcp-edge dev` runs.
    config.servers[0].tools.push({
      name: 'add_lead',
      description: 'Adds a lead to the CRM workflow.',
      inputSchema: { type: 'object', properties: { email: { type: 'string' } }, required: ['email'] },
      http: { method: 'POST', url: '{+env.WEBHOOK_URL}' },
    });
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    const names = await toolNamesWhen(url, (n) => n.includes('add_lead'), 60_000, dev.output);
    assert.deepEqual(names, ['ask_my_workflow', 'add_lead']);
  } finally {
    await dev.stop();
    webhook.close();
  }

  // An OpenAPI document in YAML, imported as a second server with the package's own command.
  writeFileSync(join(dir, 'todo.yaml'), TODO_API);
  const imported = sh(bin, ['import-openapi', 'todo.yaml']);
  assert.equal(imported.status, 0, imported.stderr);
  assert.equal(imported.stdout, `Todo (OpenAPI 3.1.0): 2 operations, 2 tools, 0 skipped
added to server "todo" at /todo/mcp (new) in mcp-edge.json

The tools read these secrets (npx wrangler secret put NAME; for dev, NAME=value in .dev.vars):
  TODO_TOKEN                   bearer token (scheme "token")
`);
  const checked = sh(bin, ['check']);
  assert.equal(checked.status, 0, checked.stderr);
  assert.match(checked.stdout, /^mcp-edge\.json: ok: todo 1\.0\.0 on \/todo\/mcp and \/todo\/stream: tools listTodos, getTodo$/m);

  const dry = sh(join(dir, 'node_modules', '.bin', 'wrangler'), ['deploy', '--dry-run', '--outdir', 'out']);
  assert.equal(dry.status, 0, dry.stderr);
  const bundle = readFileSync(join(dir, 'out', 'index.js'), 'utf8');
  assert.ok(bundle.includes('add_lead') && bundle.includes('listTodos'), 'the configuration is bundled with the Worker');
  assert.ok(spawnSync('sh', ['-c', 'ls out/*.wasm'], { cwd: dir }).status === 0, 'the wasm module is uploaded beside it');
  assert.ok(bundle.includes('import("./codemode.js")') && existsSync(join(dir, 'out', 'codemode.js')), 'code mode\'s sandbox is uploaded as a module of its own');
});
