// `wrangler deploy` from the repository after a change to the configuration alone runs no cargo:
// the [build] command finds the wasm's own inputs unchanged, and wrangler bundles the file as
// data beside it. `npm test` has built `build/` before the tests run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './harness.mjs';
import { wranglerConfigFor } from '../../scripts/wrangler-config.mjs';

/** acorn's, in code mode's sandbox: where this text is, the sandbox is. */
const ACORN = 'Unterminated string constant';

/** `wrangler deploy --dry-run` of the wrangler configuration `toml` into `out`; what it printed. */
function dryRun(toml, out) {
  const r = spawnSync(join(root, 'node_modules', '.bin', 'wrangler'), ['deploy', '--dry-run', '--outdir', out, '--config', toml], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout + r.stderr;
}

test('wrangler deploy --dry-run after a configuration edit bundles the new file and builds no Rust', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-deploy-'));
  const config = join(dir, 'mcp-edge.json');
  copyFileSync(join(root, 'mcp-edge.json'), config);
  const edited = JSON.parse(readFileSync(config, 'utf8'));
  edited.servers[0].tools.push({ name: 'deployed_tool', http: { url: 'https://api.example.com/x' } });
  writeFileSync(config, JSON.stringify(edited));
  const out = join(dir, 'out');
  const printed = dryRun(wranglerConfigFor(config), out);
  assert.match(printed, /\[custom build\] Running: node scripts\/build\.mjs/);
  assert.ok(!printed.includes('cargo build') && !printed.includes('Compiling'), `the deploy built Rust:\n${printed}`);
  assert.ok(readFileSync(join(out, 'index.js'), 'utf8').includes('deployed_tool'), 'the edited configuration is bundled');
  assert.ok(readdirSync(out).some((f) => f.endsWith('.wasm')), 'the wasm is uploaded beside it');
  // Code mode's sandbox stays a module of its own, loaded at the first program.
  const bundle = readFileSync(join(out, 'index.js'), 'utf8');
  assert.ok(bundle.includes('import("./codemode.js")') && !bundle.includes(ACORN), 'code mode\'s sandbox is bundled into index.js');
  assert.ok(readFileSync(join(out, 'codemode.js'), 'utf8').includes(ACORN), 'codemode.js, with acorn, is uploaded beside it');
});

// A folder whose wrangler.toml predates the rule that uploads code mode's sandbox apart (a
// package upgraded, its toml kept) still deploys: wrangler bundles the sandbox into index.js.
test('without the sandbox\'s rule, wrangler deploy --dry-run bundles the sandbox into index.js', { timeout: 120_000 }, () => {
  const toml = wranglerConfigFor(join(root, 'mcp-edge.json'));
  const lines = readFileSync(toml, 'utf8').split('\n');
  const kept = lines.filter((line) => !/^(find_additional_modules|rules) = /.test(line));
  assert.equal(lines.length - kept.length, 2, 'wrangler.toml has the two lines for codemode.js');
  const old = toml.replace(/\.toml$/, '-without-sandbox-rule.toml');
  writeFileSync(old, kept.join('\n'));
  const out = join(mkdtempSync(join(tmpdir(), 'mcp-edge-deploy-')), 'out');
  dryRun(old, out);
  assert.ok(readFileSync(join(out, 'index.js'), 'utf8').includes(ACORN), 'the sandbox is not bundled into index.js');
  assert.ok(!readdirSync(out).includes('codemode.js'), 'codemode.js is uploaded apart');
});
