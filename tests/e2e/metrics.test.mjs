//! GET /metrics end to end: known calls of every outcome (ok, upstream error, timeout, tool
//! error, denied, cancelled, rate limited) through a real worker and a real upstream, then
//! Debian's Prometheus 2.x scrapes /metrics with the scrape token (it asks for OpenMetrics) and
//! its HTTP API answers the exact counts; promtool checks the text exposition; a scrape without
//! the token, or with a wrong one, is refused, and no session id or secret is ever in the output;
//! a refused token request and a failed sign-in are counted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startServer, post, root, INIT, API_KEY, TOKENS } from './harness.mjs';
import { installPrometheus, startPrometheus, PROMTOOL } from './prometheus.mjs';

const SCRAPE_TOKEN = 'scrape-token-6b1e9f0c2d7a4e58';
const ADMIN_TOKEN = 'admin-token-3f9a1c7e5b2d8046a1c3e5f7b9d0';
const OAUTH_SIGNING_KEY = 'oauth-signing-key-8c2e4a6f1b3d5e7f9a0c';
const config = join(root, 'tests', 'e2e', 'metrics-config.json');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let server;
let mcp;
let sid;
const bot = { authorization: `Bearer ${TOKENS.BOT_TOKEN}` };

before(async () => {
  installPrometheus();
  server = await startServer({ config, bindings: { METRICS_SCRAPE_TOKEN: SCRAPE_TOKEN, MCP_EDGE_ADMIN_TOKEN: ADMIN_TOKEN, OAUTH_SIGNING_KEY, ALICE_PASSWORD: 'alice-password-1' } });
  mcp = new URL('/mcp', server.url);
});

after(async () => {
  await server?.close();
});

function metrics(headers = {}) {
  return fetch(new URL('/metrics', server.url), { headers });
}

/** The text exposition, as a scraper with the scrape token reads it. */
async function scrape(accept) {
  const res = await metrics({ authorization: `Bearer ${SCRAPE_TOKEN}`, ...(accept ? { accept } : {}) });
  assert.equal(res.status, 200);
  return { type: res.headers.get('content-type'), text: await res.text() };
}

let nextId = 1;
function call(name, args, headers = bot) {
  return post(mcp, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, { 'mcp-session-id': sid, ...headers });
}

/** Polls until `check` passes (figures reach the health object within 5 s of their call). */
async function eventually(check, ms = 30_000) {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > until) throw e;
      await sleep(500);
    }
  }
}

test('/metrics refuses a scrape without the token, or with a wrong one', async () => {
  for (const headers of [{}, { authorization: 'Bearer wrong-token' }, { authorization: `Bearer ${TOKENS.BOT_TOKEN}` }, { authorization: `Basic ${Buffer.from(`x:${SCRAPE_TOKEN}`).toString('base64')}` }]) {
    const res = await metrics(headers);
    assert.equal(res.status, 401, JSON.stringify(headers));
    assert.match(res.headers.get('www-authenticate'), /^Bearer realm="metrics"/);
    assert.doesNotMatch(await res.text(), /mcp_edge/);
  }
  // The admin token may, as on the admin API.
  const admin = await metrics({ authorization: `Bearer ${ADMIN_TOKEN}` });
  assert.equal(admin.status, 200);
  assert.equal(admin.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  assert.match(await admin.text(), /^# HELP mcp_edge_tool_calls_total /);
  assert.equal((await post(new URL('/metrics', server.url), {}, { authorization: `Bearer ${SCRAPE_TOKEN}` })).status, 405);
});

test('Prometheus scrapes the exact counts of known calls', async () => {
  const init = await post(mcp, INIT, bot);
  assert.equal(init.status, 200);
  sid = init.headers.get('mcp-session-id');
  await init.text();
  assert.equal((await post(mcp, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid, ...bot })).status, 202);

  // ok ×3 (echo), upstream_error ×2 (500), timeout ×1, tool_error ×1 (invalid arguments),
  // denied ×1 (a tool for admins).
  for (const m of ['a', 'b', 'c']) assert.equal((await (await call('echo', { message: m })).json()).result.isError, undefined);
  for (let i = 0; i < 2; i++) assert.equal((await (await call('fail', {})).json()).result.isError, true);
  assert.equal((await (await call('slow', {})).json()).result.isError, true);
  const invalid = await (await call('echo', { message: 7 })).json();
  assert.ok(invalid.result?.isError || invalid.error, JSON.stringify(invalid));
  const denied = await (await call('admin_reset', {})).json();
  assert.ok(denied.error, JSON.stringify(denied));

  // cancelled ×1: a held call, then notifications/cancelled.
  const cancelledId = nextId;
  const pending = call('hold', { key: 'cancel-me' });
  await server.upstream.waitForHold('cancel-me');
  assert.equal((await post(mcp, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: cancelledId } }, { 'mcp-session-id': sid, ...bot })).status, 202);
  await (await pending).text();

  // rate_limited ×1: one call in flight is the limit; a second is refused while it runs.
  const held = call('hold', { key: 'in-flight' });
  await server.upstream.waitForHold('in-flight');
  const busy = await (await call('echo', { message: 'too many' })).json();
  assert.ok(busy.error, JSON.stringify(busy));
  server.upstream.release('in-flight', 'released');
  assert.match(await (await held).text(), /released/);

  const expected = {
    'echo ok': 3,
    'echo tool_error': 1,
    'echo rate_limited': 1,
    'fail upstream_error': 2,
    'slow timeout': 1,
    'admin_reset denied': 1,
    'hold cancelled': 1,
    'hold ok': 1,
  };
  const prometheus = await startPrometheus(new URL('/metrics', server.url).href, SCRAPE_TOKEN);
  try {
    const counts = await eventually(async () => {
      const rows = await prometheus.query('mcp_edge_tool_calls_total{job="mcp-edge"}');
      const got = Object.fromEntries(rows.map((r) => [`${r.metric.tool} ${r.metric.outcome}`, Number(r.value[1])]));
      assert.deepEqual(got, expected);
      return rows;
    });
    for (const row of counts) {
      assert.equal(row.metric.server, 'metrics-test');
      assert.equal(row.metric.principal, undefined, 'no principal label unless configured');
    }
    // Histogram counts: every call that ran (not the refused ones), and the upstream exchanges
    // that ended (not the invalid arguments, nor the cancelled one).
    const byTool = async (q, label) => Object.fromEntries((await prometheus.query(q)).map((r) => [r.metric[label], Number(r.value[1])]));
    assert.deepEqual(await byTool('mcp_server_operation_duration_seconds_count', 'gen_ai_tool_name'), { echo: 4, fail: 2, slow: 1, hold: 2 });
    assert.deepEqual(await byTool('mcp_edge_upstream_duration_seconds_count', 'tool'), { echo: 3, fail: 2, slow: 1, hold: 1 });
    // The timeout took at least its 300 ms: not in the buckets below, in those above.
    assert.deepEqual(await byTool('mcp_edge_upstream_duration_seconds_bucket{tool="slow",le=~"0.2|0.5|\\\\+Inf"}', 'le'), { '0.2': 0, '0.5': 1, '+Inf': 1 });
    const [methodLabel] = await prometheus.query('mcp_server_operation_duration_seconds_count{gen_ai_tool_name="echo"}');
    assert.equal(methodLabel.metric.mcp_method_name, 'tools/call');
    // One session open; the deployment counters at 0.
    assert.equal(Number((await prometheus.query('mcp_edge_sessions_open'))[0].value[1]), 1);
    assert.equal(Number((await prometheus.query('mcp_edge_oauth_grants_issued_total'))[0].value[1]), 0);
    assert.deepEqual((await prometheus.query('mcp_edge_tasks')).map((r) => r.metric.state).sort(), ['cancelled', 'completed', 'failed', 'input_required', 'working']);
    const [target] = await prometheus.targets();
    assert.equal(target.health, 'up', target.lastError);
  } finally {
    await prometheus.close();
  }

  // The session ends: the gauge follows.
  const ended = await fetch(mcp, { method: 'DELETE', headers: { 'mcp-session-id': sid, ...bot } });
  assert.equal(ended.status, 200);
  await eventually(async () => assert.match((await scrape()).text, /^mcp_edge_sessions_open 0$/m));
});

test('the deployment counters: a refused token request, a failed sign-in', async () => {
  const origin = server.url.origin;
  const form = (body) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: new URLSearchParams(body).toString(), redirect: 'manual' });
  const refused = await fetch(new URL('/token', server.url), form({ grant_type: 'authorization_code', code: 'not-a-code', client_id: 'nobody', redirect_uri: 'http://127.0.0.1/cb', code_verifier: 'x'.repeat(43) }));
  assert.ok(refused.status >= 400 && refused.status < 500, `the token request is refused: ${refused.status}`);
  await refused.text();
  const signin = await fetch(new URL('/console/signin', server.url), form({ token: 'not-the-admin-token' }));
  assert.equal(signin.status, 401);
  await signin.text();
  await eventually(async () => {
    const { text } = await scrape();
    assert.match(text, /^mcp_edge_oauth_grants_refused_total 1$/m);
    assert.match(text, /^mcp_edge_oauth_grants_issued_total 0$/m);
    assert.match(text, /^mcp_edge_signin_failures_total 1$/m);
  });
});

test('promtool checks the exposition; OpenMetrics when asked, ending with # EOF', async () => {
  const text = await scrape();
  assert.equal(text.type, 'text/plain; version=0.0.4; charset=utf-8');
  const checked = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text.text, encoding: 'utf8' });
  assert.equal(checked.status, 0, `${checked.stdout}${checked.stderr}`);
  const om = await scrape('application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5');
  assert.equal(om.type, 'application/openmetrics-text; version=1.0.0; charset=utf-8');
  assert.ok(om.text.endsWith('# EOF\n'));
  assert.match(om.text, /^# TYPE mcp_edge_tool_calls counter$/m);
  assert.match(om.text, /^mcp_edge_tool_calls_total\{/m);
  assert.match(om.text, /^# UNIT mcp_server_operation_duration_seconds seconds$/m);
});

test('no session id, token or secret is ever in the output', async () => {
  for (const accept of [undefined, 'application/openmetrics-text']) {
    const { text } = await scrape(accept);
    assert.ok(sid && !text.includes(sid), 'the session id');
    for (const secret of [SCRAPE_TOKEN, ADMIN_TOKEN, OAUTH_SIGNING_KEY, 'alice-password-1', API_KEY, ...Object.values(TOKENS)]) {
      assert.ok(!text.includes(secret), `a secret: ${secret.slice(0, 4)}…`);
    }
    assert.doesNotMatch(text, /token:|principal=/);
  }
});
