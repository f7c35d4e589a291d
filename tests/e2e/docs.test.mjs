// The documentation keeps up with the code: every field of the configuration model
// (src/config/model.rs, as serde names it) is documented in docs/, every relative link in the
// README and docs/ leads to a file that exists, and so does every file of the repository they
// name in backticks (`src/edge/forward.rs`, `tests/e2e/docs.test.mjs`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { root } from './harness.mjs';

/** Each struct's fields as the file spells them: camelCase, or the name `rename` gives. */
function modelFields() {
  const source = readFileSync(join(root, 'src', 'config', 'model.rs'), 'utf8');
  const fields = [];
  let struct = null;
  let rename = null;
  let camel = false;
  for (const line of source.split('\n')) {
    const attrs = line.match(/^#\[serde\((.*)\)\]/);
    if (attrs) camel = attrs[1].includes('rename_all = "camelCase"');
    const open = line.match(/^pub struct (\w+) \{/);
    if (open) struct = open[1];
    if (line === '}') struct = null;
    if (!struct) continue;
    const renamed = line.match(/^\s+#\[serde\(.*rename = "([^"]+)"/);
    if (renamed) rename = renamed[1];
    const field = line.match(/^\s+pub (\w+):/);
    if (field) {
      const name = rename ?? (camel ? field[1].replace(/_(\w)/g, (_, c) => c.toUpperCase()) : field[1]);
      fields.push({ struct, name });
      rename = null;
    }
  }
  return fields;
}

const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => readFileSync(join(root, 'docs', f), 'utf8')).join('\n');

test('the model has fields to check (the reader follows model.rs)', () => {
  const fields = modelFields();
  assert.ok(fields.length > 100, `only ${fields.length} fields read`);
  for (const known of ['servers', '$schema', 'leaseMs', 'tokenSecret', 'privateUpstreams', 'outputSchema']) {
    assert.ok(fields.some((f) => f.name === known), known);
  }
});

test('every field of the configuration model is documented in docs/', () => {
  const missing = modelFields().filter(({ name }) => {
    const escaped = name.replace(/[$]/g, '\\$&');
    // `name`, or a dotted path through it: `http.body` documents `body`, `sessions.leaseMs`
    // documents `sessions` too.
    return !new RegExp('`([\\w$\\[\\].]*\\.)?' + escaped + '(\\.[\\w$\\[\\].]*)?`').test(docs);
  });
  assert.deepEqual(missing, []);
});

test('relative links in the README and docs/ lead to files that exist', () => {
  const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
  const broken = [];
  for (const page of pages) {
    for (const [, target] of readFileSync(join(root, page), 'utf8').matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      if (!existsSync(join(root, dirname(page), target))) broken.push(`${page} → ${target}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('every repository file the README and docs/ name exists', () => {
  const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
  const missing = [];
  for (const page of pages) {
    for (const [, path] of readFileSync(join(root, page), 'utf8').matchAll(/`((?:src|tests|scripts|bench|cli|examples)\/[\w./-]*[\w/])`/g)) {
      if (!existsSync(join(root, path))) missing.push(`${page}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});
