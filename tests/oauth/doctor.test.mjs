// `mcp-edge doctor` against mcp-edge with its own authorization server (`users` sign-in, signed
// in headless): healthy, then with one fault at a time injected by a real proxy in front of it.
// Each fault must be named by its id in --json and in words in the report, with exit code 1.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { PASSWORDS, readConfig, startOAuthWorker } from './worker.mjs';
import { runDoctor, startFaultProxy, startStreamingUpstream } from './doctor_proxy.mjs';
import { join } from 'node:path';
import { root } from '../e2e/harness.mjs';

const ENV = { DOCTOR_PASSWORD: PASSWORDS.ALICE_PASSWORD };
const HEADLESS = ['--user', 'alice', '--password-env', 'DOCTOR_PASSWORD'];

let worker;
let proxy;
let upstream;

before(async () => {
  upstream = await startStreamingUpstream();
  const config = readConfig();
  const server = config.servers[0];
  server.allowedOrigins = ['https://claude.ai', 'https://chatgpt.com'];
  // First in the list, and it needs no arguments: the doctor's default call. It streams.
  server.tools.unshift({
    name: 'status',
    description: 'Reports the service status, streaming progress first.',
    inputSchema: { type: 'object', properties: {} },
    http: { url: '{+env.STREAMING_URL}/status' },
  });
  worker = await startOAuthWorker({ config, bindings: { STREAMING_URL: upstream.url } });
  proxy = await startFaultProxy(worker.origin);
});

after(async () => {
  await proxy?.close();
  await worker?.close();
  await upstream?.close();
});

async function doctor(fault, { path = '/mcp', args = [] } = {}) {
  proxy.state.fault = fault;
  const r = await runDoctor([`${proxy.url}${path}`, ...HEADLESS, '--json', ...args], ENV);
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    assert.fail(`doctor printed no JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { ...r, report };
}

const step = (report, id) => report.steps.find((s) => s.id === id);

/** Nothing that looks like a token or the password in what the doctor printed. */
function noSecrets(output) {
  assert.doesNotMatch(output, /eyJ[\w-]{8,}\.[\w-]{8,}/, 'a JWT in the output');
  assert.ok(!output.includes(PASSWORDS.ALICE_PASSWORD), 'the password in the output');
  assert.doesNotMatch(output, /mcpe_ac\./, 'an authorization code in the output');
}

test('healthy: every step passes through a proxy that changes nothing, exit 0', async () => {
  const r = await doctor(undefined);
  assert.equal(r.code, 0, r.stdout);
  assert.equal(r.report.ok, true);
  assert.deepEqual(r.report.faults, []);
  for (const s of r.report.steps) {
    assert.equal(s.ok, true, `${s.id}: ${s.detail}`);
  }
  assert.equal(step(r.report, 'iss-parameter').ok, true, 'mcp-edge advertises and sends iss');
  assert.match(step(r.report, 'token-claims').detail, /aud "http:\/\/127\.0\.0\.1:\d+\/mcp"/);
  assert.match(step(r.report, 'token').detail, /sha256:[0-9a-f]{8}/);
  assert.match(step(r.report, 'call').detail, /^status: answered/);
  assert.match(step(r.report, 'sse').detail, /first event \d+ ms after the request/);
  for (const s of r.report.steps) assert.deepEqual(Object.keys(s).slice(0, 6), ['id', 'title', 'ok', 'fault', 'spec', 'detail']);
  noSecrets(r.stdout + r.stderr);
});

test('healthy, the report for people: ✓ on every line, no ✗, the same exit code', async () => {
  proxy.state.fault = undefined;
  const r = await runDoctor([`${worker.origin}/mcp`, ...HEADLESS], ENV);
  assert.equal(r.code, 0, r.stdout);
  assert.doesNotMatch(r.stdout, /✗/);
  assert.match(r.stdout, /✓ POST initialize without a token: 401 and WWW-Authenticate/);
  assert.match(r.stdout, /✓ tools\/call \(one call\)/);
  assert.match(r.stdout, /Healthy: no fault found\./);
  noSecrets(r.stdout + r.stderr);
});

test('the browser mode: the doctor opens the sign-in in a real browser (BROWSER) and takes the code at its loopback listener', async () => {
  proxy.state.fault = undefined;
  const browser = `${process.execPath} ${join(root, 'tests', 'oauth', 'doctor_browser.mjs')}`;
  const r = await runDoctor([`${proxy.url}/mcp`, '--json', '--browser-timeout', '90'], { ...ENV, BROWSER: browser, DOCTOR_BROWSER_USER: 'alice' });
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(step(report, 'authorization').detail, /code received \(in the browser\), state matches/);
  assert.match(step(report, 'registration').detail, /redirect URI http:\/\/127\.0\.0\.1:\d+\/callback/);
  // It said where it sent the browser, and waited for the redirect.
  assert.match(r.stderr, /Opened your browser at http:\/\/127\.0\.0\.1:\d+\/authorize\?/);
  assert.match(r.stderr, /Waiting for the redirect to http:\/\/127\.0\.0\.1:\d+\/callback/);
  noSecrets(r.stdout + r.stderr);
});

const FAULTS = [
  ['resource', {}, 'resource-mismatch', 'resource', /aud\/resource mismatch/, /RFC 9728 §3\.3/],
  ['issuer', {}, 'issuer-mismatch', 'issuer', /iss mismatch/, /RFC 8414 §3\.3/],
  ['403', {}, 'blocked-in-front', 'challenge', /something in front of the server/, /MCP authorization/],
  [undefined, { path: '/wrong' }, 'wrong-path', 'challenge', /wrong path/, /Streamable HTTP/],
  ['no-www-authenticate', {}, 'missing-www-authenticate', 'challenge', /a 401 without a WWW-Authenticate header/, /RFC 9728 §5\.1/],
  ['refuse-redirect', {}, 'redirect-uri-refused', 'registration', /the redirect URI was refused/, /RFC 7591 §3\.2\.2/],
  ['buffer', {}, 'sse-buffered', 'sse', /SSE buffered/, /Streamable HTTP/],
];

for (const [fault, options, id, stepId, words, spec] of FAULTS) {
  test(`a fault named: ${id}${fault ? ` (the proxy injects ${fault})` : ` (${options.path})`}`, async () => {
    const r = await doctor(fault, options);
    assert.equal(r.code, 1, r.stdout);
    assert.equal(r.report.ok, false);
    assert.ok(r.report.faults.includes(id), `faults ${JSON.stringify(r.report.faults)}`);
    const s = r.report.steps.find((x) => x.fault === id);
    assert.equal(s.id, stepId);
    assert.equal(s.ok, false);
    assert.match(s.words, words);
    assert.match(s.spec, spec);
    assert.ok(s.fix.length > 20);
    noSecrets(r.stdout + r.stderr);
    // The report for people says it in the same words.
    const text = await runDoctor([`${proxy.url}${options.path ?? '/mcp'}`, ...HEADLESS], ENV);
    assert.equal(text.code, 1);
    assert.match(text.stdout, new RegExp(`✗ .*\\n    .*\\[${id}\\]`));
    assert.match(text.stdout, words);
  });
}

test('the faults stay apart: each injection is named alone', async () => {
  for (const [fault, options, id] of FAULTS) {
    const r = await doctor(fault, options);
    assert.deepEqual(r.report.faults, [id], `${fault ?? options.path}: ${JSON.stringify(r.report.faults)}`);
  }
  // After a wrong resource the rest of the chain still ran and passed: the doctor goes on with
  // the server's own URL, as a lenient client would, to find any further fault.
  const r = await doctor('resource');
  assert.equal(step(r.report, 'initialize').ok, true);
  assert.equal(step(r.report, 'call').ok, true);
});

test('--token skips registration and sign-in; a token the server refuses is named', async () => {
  proxy.state.fault = undefined;
  const r = await runDoctor([`${proxy.url}/mcp`, '--token-env', 'DOCTOR_TOKEN', '--json'], { DOCTOR_TOKEN: 'not-a-token-at-all' });
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 1);
  assert.equal(step(report, 'registration').ok, null);
  assert.equal(step(report, 'initialize').fault, 'token-rejected');
  assert.ok(!r.stdout.includes('not-a-token-at-all'));
});

test('headless with a wrong password: the sign-in page\'s own words, and no password printed', async () => {
  proxy.state.fault = undefined;
  const r = await runDoctor([`${proxy.url}/mcp`, '--user', 'alice', '--password-env', 'WRONG', '--json'], { WRONG: 'not-her-password-5e1' });
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 1);
  assert.deepEqual(report.faults, ['authorization-failed']);
  assert.match(step(report, 'authorization').detail, /the sign-in page came back: "Wrong username or password\." \(wrong user or password\?\)/);
  assert.ok(!r.stdout.includes('not-her-password-5e1'));
});

test('usage errors exit 2', async () => {
  for (const args of [[], ['not a url'], ['ftp://x/mcp'], ['http://127.0.0.1:9/mcp', '--user', 'alice'], ['http://127.0.0.1:9/mcp', '--bogus'], ['http://127.0.0.1:9/mcp', '--user', 'a', '--password-env', 'UNSET_DOCTOR_VAR']]) {
    const r = await runDoctor(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
  }
});
