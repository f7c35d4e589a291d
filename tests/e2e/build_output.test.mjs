// The module the build writes (scripts/build.mjs, scripts/entry.js; issue 45 replaced worker-build
// with them) exports what its consumers take, in the shape they take it: wrangler and Miniflare a
// plain handler object and the Durable Object class, `mcp-edge check` the wasm's `check_config`.
// Loaded in workerd, as wrangler loads it. The rescue after a trap is tests/e2e/panic.test.mjs's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { behind } from '../../cli/worker.mjs';
import { root } from './harness.mjs';

const dir = join(root, 'build');

test('the bundle imports no WorkerEntrypoint and schedules no microtask with queueMicrotask', () => {
  const js = readFileSync(join(dir, 'index.js'), 'utf8');
  const exported = /export\{([^}]*)\}/.exec(js)[1].split(',').map((e) => e.split(' as ').pop());
  for (const name of ['default', 'McpSession', 'check_config']) assert.ok(exported.includes(name), `index.js does not export ${name}: ${exported}`);
  assert.ok(!/import\{[^}]*WorkerEntrypoint/.test(js), 'index.js uses a WorkerEntrypoint (an object per request)');
  assert.ok(!/\.queueMicrotask\b/.test(js), 'index.js looks queueMicrotask up: wasm-bindgen futures would use it');
});

// Code mode's sandbox (acorn and src/edge/code/sandbox.js) is four fifths of the Worker's
// JavaScript: a module of its own, imported when the isolate prepares its first program
// (src/edge/code/lazy.js), so that an isolate that runs none never parses it. Code mode's own
// tests (codemode.test.mjs) run programs through it.
test('code mode\'s sandbox is a module of its own, which index.js imports only when it runs', () => {
  const js = readFileSync(join(dir, 'index.js'), 'utf8');
  const sandbox = readFileSync(join(dir, 'codemode.js'), 'utf8');
  assert.ok(js.includes('import("./codemode.js")'), 'index.js does not import codemode.js');
  assert.ok(!/import[^("]*"\.\/codemode\.js"/.test(js), 'index.js imports codemode.js statically');
  assert.ok(!js.includes('Unterminated string constant'), 'acorn is bundled into index.js');
  assert.ok(sandbox.includes('Unterminated string constant'), 'codemode.js lacks acorn');
  assert.match(sandbox, /export\{[^}]*\bprepare\b/, 'codemode.js does not export prepare');
});

// A worker in front of the module that reports the shapes of its exports.
const ENTRY = `import handlers, { McpSession, check_config } from './index.js';
export default {
  async fetch() {
    const methods = (o) => Object.getOwnPropertyNames(o).filter((k) => typeof o[k] === 'function').sort();
    return Response.json({
      plain: Object.getPrototypeOf(handlers) === Object.prototype,
      handlers: methods(handlers),
      session: methods(McpSession.prototype),
      check: check_config('mcp-edge.json', '{"servers":[]}').split('\\n')[0],
    });
  },
};`;

test('in workerd: a plain handler object, the session class with its handlers, check_config', async () => {
  const mf = behind(dir, 'shape-entry.mjs', ENTRY);
  try {
    const shape = await (await mf.dispatchFetch('http://shape/')).json();
    assert.equal(shape.plain, true);
    assert.deepEqual(shape.handlers, ['fetch', 'queue']);
    for (const m of ['fetch', 'alarm']) assert.ok(shape.session.includes(m), `McpSession has no ${m}: ${shape.session}`);
    assert.ok(['ok', 'fault'].includes(shape.check), `check_config answered ${shape.check}`);
  } finally {
    await mf.dispose();
  }
});
