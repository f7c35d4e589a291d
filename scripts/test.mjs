//! `npm test`: installs what is missing, runs the native core tests, builds the test worker and
//! the package, and runs the end-to-end tests against them in workerd.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { root, run, setup } from './setup.mjs';
import { build } from './build.mjs';
import { pack } from './package.mjs';
import { installClients } from '../tests/e2e/clients.mjs';

setup();
run('cargo', ['test', '--quiet']);
run('cargo', ['clippy', '--quiet', '--all-targets', '--', '-D', 'warnings']);
run('cargo', ['clippy', '--quiet', '--lib', '--target', 'wasm32-unknown-unknown', '--', '-D', 'warnings']);
// Two builds serve every configuration the tests use, each read as data when a worker starts:
// one with test hooks, and the release build that `npm start` and the package ship.
build({ outDir: 'build-test', testHooks: true });
build();
// The release as users install it, for tests/e2e/package.test.mjs.
pack();
// The third-party clients the compatibility tests drive, installed ahead of the tests.
installClients();
const files = readdirSync(join(root, 'tests', 'e2e')).filter((f) => f.endsWith('.test.mjs')).map((f) => join('tests', 'e2e', f));
run(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=120000', ...files]);
// The official MCP conformance suite, --suite all: every scenario must pass, with no warnings.
run(process.execPath, [join(root, 'scripts', 'conformance.mjs')]);
