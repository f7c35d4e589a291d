// Code mode's binding as the command line sees it: `mcp-edge check` (and so `deploy`) refuses a
// configuration with a code-mode server when the deployment's wrangler config has no Worker
// Loader binding named LOADER, naming the fix; `mcp-edge init --code` adds it (and `init` does
// when the configuration there needs it); `import-openapi --code` serves an import in code mode.
// The repository's own wrangler.toml, the one `npm start` and the tests derive theirs from, has it.
// `check` also notes a wrangler config that bundles code mode's sandbox into index.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './harness.mjs';
import { hasLoader, SANDBOX_LINES, uploadsSandbox } from '../../cli/loader.mjs';
import { wranglerConfigFor } from '../../scripts/wrangler-config.mjs';

const cli = join(root, 'cli', 'mcp-edge.mjs');
const sh = (dir, args) => spawnSync(process.execPath, [cli, ...args], { cwd: dir, encoding: 'utf8' });

/** A new project folder (the starter), its one server switched to code mode. */
function project() {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-code-'));
  const init = sh(dir, ['init']);
  assert.equal(init.status, 0, init.stderr);
  assert.doesNotMatch(init.stdout, /Worker Loader/, 'a plain init adds no binding');
  const file = join(dir, 'mcp-edge.json');
  const config = JSON.parse(readFileSync(file, 'utf8'));
  config.servers[0].toolDiscovery = 'code';
  writeFileSync(file, JSON.stringify(config, null, 2));
  return dir;
}

const FAULT = `mcp-edge.json: server "my-mcp-server" uses code mode ("toolDiscovery": "code"), which runs each program through the Worker Loader binding "LOADER", and wrangler.toml declares none: add to wrangler.toml:

[[worker_loaders]]
binding = "LOADER"

(or run \`npx mcp-edge init --code\`, which adds it)
`;

test('check refuses code mode without the LOADER binding, naming the fix; init --code adds it, once; then check passes', () => {
  const dir = project();
  // The starter carries the block commented out: a comment is no binding.
  assert.match(readFileSync(join(dir, 'wrangler.toml'), 'utf8'), /^# \[\[worker_loaders\]\]$/m);
  const refused = sh(dir, ['check']);
  assert.equal(refused.status, 1);
  assert.equal(refused.stderr, FAULT);
  assert.equal(refused.stdout, '');

  const added = sh(dir, ['init', '--code']);
  assert.equal(added.status, 0, added.stderr);
  assert.match(added.stdout, /^added code mode's Worker Loader binding \(LOADER\) to wrangler\.toml$/m);
  const toml = readFileSync(join(dir, 'wrangler.toml'), 'utf8');
  assert.match(toml, /^\[\[worker_loaders\]\]\nbinding = "LOADER"$/m);
  assert.equal(sh(dir, ['init', '--code']).stdout.includes('added'), false, 'a second init --code leaves it as it is');
  assert.equal(readFileSync(join(dir, 'wrangler.toml'), 'utf8'), toml);

  const ok = sh(dir, ['check']);
  assert.equal(ok.stderr, '');
  assert.equal(ok.status, 0);
  assert.match(ok.stdout, /^mcp-edge\.json: ok: my-mcp-server 0\.1\.0 on \/mcp/);
});

test('init adds the binding without --code when the configuration there uses code mode; unknown options are refused', () => {
  const dir = project();
  const again = sh(dir, ['init']);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /kept wrangler\.toml \(it exists\)\n[\s\S]*added code mode's Worker Loader binding \(LOADER\) to wrangler\.toml/);
  assert.ok(hasLoader({ file: 'wrangler.toml', text: readFileSync(join(dir, 'wrangler.toml'), 'utf8') }));
  const wrong = sh(dir, ['init', '--codes']);
  assert.equal(wrong.status, 1);
  assert.match(wrong.stderr, /mcp-edge: unknown option --codes/);
});

test('a binding of another name, or under another table, is not LOADER; wrangler.jsonc is read too', () => {
  const dir = project();
  const toml = join(dir, 'wrangler.toml');
  const starter = readFileSync(toml, 'utf8');
  writeFileSync(toml, `${starter}\n[[worker_loaders]]\nbinding = "OTHER"\n\n[vars]\nbinding = "LOADER"\n`);
  assert.equal(sh(dir, ['check']).stderr, FAULT);

  // wrangler prefers wrangler.json(c) to wrangler.toml, and so does the check.
  const jsonc = join(dir, 'wrangler.jsonc');
  writeFileSync(jsonc, '{\n  // the starter, as JSON\n  "name": "my-mcp-server",\n  "main": "node_modules/mcp-edge/build/index.js",\n}\n');
  const refused = sh(dir, ['check']);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /and wrangler\.jsonc declares none: add "worker_loaders": \[\{ "binding": "LOADER" \}\] to wrangler\.jsonc\n$/);
  writeFileSync(jsonc, '{\n  "name": "my-mcp-server", // "worker_loaders": []\n  "worker_loaders": [{ "binding": "LOADER" }],\n}\n');
  const ok = sh(dir, ['check']);
  assert.doesNotMatch(ok.stderr, /Worker Loader/);
  assert.equal(ok.status, 0, ok.stderr);
});

test('a configuration without code mode needs no binding; with no wrangler config at all, check notes what it could not see', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-code-'));
  writeFileSync(join(dir, 'plain.json'), JSON.stringify({ servers: [{ name: 'plain', version: '1' }] }));
  const plain = sh(dir, ['check', 'plain.json']);
  assert.equal(plain.status, 0, plain.stderr);
  assert.equal(plain.stderr, '');
  writeFileSync(join(dir, 'code.json'), JSON.stringify({ servers: [{ name: 'coded', version: '1', toolDiscovery: 'code' }] }));
  const noted = sh(dir, ['check', 'code.json']);
  assert.equal(noted.status, 0, noted.stderr);
  assert.equal(noted.stderr, 'note: server "coded" uses code mode, which needs the Worker Loader binding "LOADER" in the deployment\'s wrangler config; none is here to check\n');
});

test("check notes a wrangler config that bundles the sandbox into index.js (a folder made before it was a module of its own), naming the lines; the starter's needs no note", () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-code-'));
  const init = sh(dir, ['init']);
  assert.equal(init.status, 0, init.stderr);
  const fresh = sh(dir, ['check']);
  assert.equal(fresh.status, 0, fresh.stderr);
  assert.equal(fresh.stderr, '', "the starter's wrangler.toml uploads the sandbox apart");
  const toml = join(dir, 'wrangler.toml');
  const current = readFileSync(toml, 'utf8');
  assert.ok(current.includes(SANDBOX_LINES), 'the note names the lines the starter has');
  const NOTE = `note: wrangler.toml does not upload code mode's sandbox as a module of its own, so wrangler bundles it into index.js and every isolate's start parses it (docs/deploying.md); add these top-level lines to wrangler.toml:\n\n${SANDBOX_LINES}\n\n`;
  // An older folder: neither line, or the rule only, or both commented out, or the rule under a table.
  const [finds, rule] = SANDBOX_LINES.split('\n');
  for (const older of [
    current.replace(`${finds}\n`, '').replace(`${rule}\n`, ''),
    current.replace(`${finds}\n`, ''),
    current.replace(finds, `# ${finds}`).replace(rule, `# ${rule}`),
    `${current.replace(`${rule}\n`, '')}\n[vars]\n${rule}\n`,
  ]) {
    writeFileSync(toml, older);
    const noted = sh(dir, ['check']);
    assert.equal(noted.status, 0, 'a note, not a fault: the bundle works the same');
    assert.equal(noted.stderr, NOTE);
  }
  // wrangler.jsonc is read as wrangler reads it, comments and trailing commas included.
  for (const [text, uploads] of [
    ['{ "find_additional_modules": true, "rules": [{ "type": "ESModule", "globs": ["**/codemode.js"], "fallthrough": false }] } // as the starter has them', true],
    ['{ "find_additional_modules": true, /* no rule */ }', false],
    ['{ "rules": [{ "type": "ESModule", "globs": ["**/codemode.js"] }] }', false],
    ['{ "find_additional_modules": true, "rules": [{ "type": "Text", "globs": ["**/codemode.js"] }] }', false],
  ]) assert.equal(uploadsSandbox({ file: 'wrangler.jsonc', text }), uploads, text);
});

test('import-openapi --code serves the import in code mode and notes the missing binding; --code with --catalog is refused', () => {
  const dir = project();
  writeFileSync(join(dir, 'api.yaml'), `openapi: 3.0.3
info: {title: Todo, version: 1.0.0}
servers: [{url: 'https://todo.example.com/v1'}]
paths:
  /todos:
    get:
      operationId: listTodos
      responses: {'200': {description: ok}}
`);
  const both = sh(dir, ['import-openapi', 'api.yaml', '--code', '--catalog']);
  assert.equal(both.status, 1);
  assert.match(both.stderr, /--catalog and --code are two ways of serving the tools: choose one/);
  const imported = sh(dir, ['import-openapi', 'api.yaml', '--code', '--server', 'todo']);
  assert.equal(imported.status, 0, imported.stderr);
  assert.match(imported.stdout, /^note: servers "my-mcp-server", "todo" use code mode \("toolDiscovery": "code"\), which runs each program through the Worker Loader binding "LOADER", and wrangler\.toml declares none/m);
  const config = JSON.parse(readFileSync(join(dir, 'mcp-edge.json'), 'utf8'));
  assert.equal(config.servers.find((s) => s.name === 'todo').toolDiscovery, 'code');
});

test("the repository's wrangler.toml, and the ones npm start and the tests write from it, declare LOADER", () => {
  const file = join(root, 'wrangler.toml');
  assert.ok(hasLoader({ file, text: readFileSync(file, 'utf8') }));
  const derived = wranglerConfigFor(join(root, 'mcp-edge.json'));
  assert.ok(hasLoader({ file: derived, text: readFileSync(derived, 'utf8') }));
});
