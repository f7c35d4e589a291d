// Issue 7's one deterministic performance target, kept by a test: the release module, built with
// the shipped configuration as `npm start` and `wrangler deploy` build it, is at most 300 KiB
// gzip (level 9, as `npm run bench` reports it). `npm test` builds it before the tests run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { root } from './harness.mjs';

const BUDGET = 300 * 1024;

test('the release wasm module is at most 300 KiB gzip', () => {
  const wasm = readFileSync(join(root, 'build', 'index_bg.wasm'));
  const gzip = gzipSync(wasm, { level: 9 }).length;
  assert.ok(gzip <= BUDGET, `index_bg.wasm is ${gzip} bytes gzip, over the budget of ${BUDGET}`);
});
