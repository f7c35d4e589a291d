//! `npm test`: installs what is missing, runs the native core tests, builds the test worker and
//! runs the end-to-end tests against it in workerd.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { root, run, setup } from './setup.mjs';
import { build } from './build.mjs';
import { installClients } from '../tests/e2e/clients.mjs';

setup();
// Every cargo run below bundles the same (end-to-end) configuration, which is compiled into the
// crate: a different one per run would rebuild the crate each time.
const e2eConfig = { env: { ...process.env, MCP_EDGE_CONFIG: join(root, 'tests', 'e2e', 'config.json') } };
run('cargo', ['test', '--quiet'], e2eConfig);
run('cargo', ['clippy', '--quiet', '--all-targets', '--', '-D', 'warnings'], e2eConfig);
run('cargo', ['clippy', '--quiet', '--lib', '--target', 'wasm32-unknown-unknown', '--', '-D', 'warnings'], e2eConfig);
build({ config: 'tests/e2e/config.json', outDir: 'build-test', testHooks: true });
build({ config: 'tests/e2e/invalid-config.json', outDir: 'build-test-invalid' });
// Seed 004's chat-scoped deployment, a shipped example with its own end-to-end test.
build({ config: 'examples/interactions/mcp-edge.json', outDir: 'build-interactions' });
// The default build, which tests/e2e/start.test.mjs serves through `npm start`.
build();
// The third-party clients the compatibility tests drive, installed ahead of the tests.
installClients();
const files = readdirSync(join(root, 'tests', 'e2e')).filter((f) => f.endsWith('.test.mjs')).map((f) => join('tests', 'e2e', f));
run(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=120000', ...files]);
// The official MCP conformance suite, --suite all: every scenario must pass, with no warnings.
run(process.execPath, [join(root, 'scripts', 'conformance.mjs')]);
