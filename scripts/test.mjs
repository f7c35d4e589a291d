//! `npm test`: installs what is missing, runs the native core tests, builds the test worker and
//! the package, and runs the end-to-end tests against them in workerd, the sign-in tests with
//! Chromium and a real OpenID provider, the status page in Chromium, the OpenAPI import's
//! tests with Prism among them, the conformance suite, and a 30-second soak run. Traces go to
//! the tests' own OTLP collector (tests/telemetry/), checked first on its own.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { root, run, setup } from './setup.mjs';
import { build } from './build.mjs';
import { pack } from './package.mjs';
import { installClients } from '../tests/e2e/clients.mjs';
import { installFixtures } from '../tests/openapi/fixtures.mjs';
import { installBrowser } from '../tests/oauth/install.mjs';
import { installCollector } from '../tests/telemetry/collector.mjs';
import { installPrometheus } from '../tests/e2e/prometheus.mjs';

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
// Debian's Chromium, which the sign-in tests drive with playwright-core (tests/oauth/).
installBrowser();
// The tests' own OTLP collector: a Python venv with the official opentelemetry-proto
// definitions (python3-venv from Debian's packages when missing), for the trace tests.
installCollector();
// Debian's Prometheus and promtool, which scrape and check /metrics (tests/e2e/metrics.test.mjs).
installPrometheus();
// Prism and the OpenAPI documents the import is tested on (tests/openapi/).
installFixtures();
const testFiles = (dir) => readdirSync(join(root, 'tests', dir)).filter((f) => f.endsWith('.test.mjs')).map((f) => join('tests', dir, f));
// The collector decodes what it is sent as the trace tests expect, before they rely on it.
run(process.execPath, ['--test', '--test-timeout=60000', ...testFiles('telemetry')]);
run(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=120000', ...testFiles('e2e')]);
// Sign-in (the OAuth authorization server): real clients, Chromium on the consent pages, a real
// OpenID provider. Browsers and token lifetimes that must run out make these slower.
run(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=300000', ...testFiles('oauth')]);
// The console: the status page at `/` in Chromium (tests/oauth/browser.mjs), with screenshots.
run(process.execPath, ['--test', '--test-concurrency=1', '--test-timeout=120000', ...testFiles('console')]);
// The OpenAPI import against Prism: a few minutes in all (the corpus calls about 2,500 tools).
run(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=1200000', ...testFiles('openapi')]);
// The official MCP conformance suite, --suite all: every scenario must pass, with no warnings.
run(process.execPath, [join(root, 'scripts', 'conformance.mjs')]);
// The same suite through a second mcp-edge that has the first as its upstream MCP server.
run(process.execPath, [join(root, 'scripts', 'conformance.mjs'), '--proxy']);
// The soak run, short: every kind of traffic under faults and a restart, nothing lost.
run(process.execPath, [join(root, 'soak', 'run.mjs')], { env: { ...process.env, SOAK_SECONDS: '30' } });
