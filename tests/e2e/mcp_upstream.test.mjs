// Upstream MCP servers behind mcp-edge (`upstreams`): the official
// @modelcontextprotocol/server-everything over Streamable HTTP, a server written with the
// official Python SDK (tests/e2e/python_upstream.py, mcp 1.30.0), and small servers of the
// harness's own for the failures (one that never answers a call, one that answers nonsense, one
// that goes away). The official SDK client, through mcp-edge: the upstream's tools listed under
// the prefix, filtered; a call; progress streamed as it comes; an elicitation asked of the
// client and answered back; the upstream restarted mid-session and the next call still working;
// each failing upstream failing only its own tools, within its time limit; the caller's
// identity as headers, and never the client's own token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { TOKENS, openSession, post, root, startMiniflare } from './harness.mjs';
import { pythonSdk } from './clients.mjs';
import { freePort, startEverything, startOwn } from './mcp_servers.mjs';

const LOOPBACK = ['127.0.0.1', 'localhost'];

/** The Python SDK's server on `port`; resolves once it answers. */
async function startPython(port) {
  const child = spawn(pythonSdk('1.30.0'), [join(root, 'tests', 'e2e', 'python_upstream.py'), String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let i = 0; i < 200; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'GET' }).then(() => true, () => false);
    if (up) return { url: `http://127.0.0.1:${port}/mcp`, close: async () => { child.kill(); await exited; } };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('the Python server did not start');
}

let legacy;
let sessions;
let growing;
let recorder;
let python;
let everything;
let everythingPort;
let goneAway;
let silent;
let nonsense;
let worker;
before(async () => {
  everythingPort = await freePort();
  everything = await startEverything(everythingPort);
  goneAway = await startEverything(await freePort());
  silent = await startOwn('silent');
  nonsense = await startOwn('nonsense');
  python = await startPython(await freePort());
  recorder = await startOwn('echo');
  legacy = await startEverything(await freePort(), 'sse');
  sessions = await startOwn('sessions');
  growing = await startOwn('growing');
  const config = {
    servers: [
      {
        route: '/mcp',
        name: 'gateway',
        version: '1',
        privateUpstreams: LOOPBACK,
        tools: [{ name: 'own', http: { url: '{+env.UPSTREAM_URL}/echo' } }],
        upstreams: [
          {
            name: 'everything',
            url: `http://127.0.0.1:${everythingPort}/mcp`,
            prefix: 'ev_',
            tools: { exclude: ['get-env', 'toggle-*'] },
            resources: { exclude: ['startup.md', 'demo://resource/dynamic/blob/*'] },
            prompts: { exclude: ['resource-*'] },
          },
          // Another server-everything: its echo only (its resources would share the first's URIs).
          { name: 'gone', url: goneAway.url, prefix: 'gone_', tools: { include: ['echo'] }, resources: { include: [] }, prompts: { include: [] } },
          { name: 'silent', url: silent.url, prefix: 'silent_', timeoutMs: 1500 },
          { name: 'nonsense', url: nonsense.url, prefix: 'junk_' },
          { name: 'python', url: python.url, prefix: 'py_' },
          { name: 'sessions', url: sessions.url, prefix: 'ses_' },
          { name: 'growing', url: growing.url, prefix: 'gro_' },
          {
            name: 'legacy',
            url: legacy.url,
            transport: 'sse',
            prefix: 'old_',
            tools: { include: ['echo', 'trigger-long-running-operation', 'trigger-elicitation-request'] },
            resources: { include: [] },
            prompts: { include: [] },
          },
        ],
      },
      {
        route: '/auth/mcp',
        name: 'behind-auth',
        version: '1',
        privateUpstreams: LOOPBACK,
        auth: { tokens: [{ secret: 'BOT_TOKEN', subject: 'bot', roles: ['staff'] }] },
        upstreams: [
          { name: 'recorder', url: recorder.url, prefix: 'rec_', headers: { Authorization: 'Bearer {env.RECORDER_TOKEN}', 'X-User': '{principal.subject}' } },
          // For admins only: its tools are gated, and it gives no resources or prompts.
          { name: 'gated', url: `http://127.0.0.1:${everythingPort}/mcp`, prefix: 'adm_', roles: ['admin'], tools: { include: ['echo'] } },
        ],
      },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-upstreams-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), bindings: { RECORDER_TOKEN: 'recorder-secret-5e1f' } });
});
after(async () => {
  await worker?.mf.dispose();
  await everything?.close();
  await goneAway?.close();
  await silent?.close();
  await nonsense?.close();
  await python?.close();
  await recorder?.close();
  await legacy?.close();
  await sessions?.close();
  await growing?.close();
});

async function connect(capabilities = {}) {
  const client = new Client({ name: 'through-mcp-edge', version: '1' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', worker.url));
  await client.connect(transport);
  return { client, transport };
}

test('the upstream tools are listed under their prefixes, filtered, beside the server\'s own', async () => {
  const { client } = await connect();
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.equal(names[0], 'own');
    for (const name of ['ev_echo', 'ev_get-sum', 'ev_trigger-long-running-operation', 'ev_trigger-elicitation-request', 'gone_echo', 'silent_work', 'junk_work']) {
      assert.ok(names.includes(name), `${name} in ${names}`);
    }
    assert.ok(!names.includes('ev_get-env') && !names.some((n) => n.startsWith('ev_toggle-')), 'excluded');
    assert.ok(!names.includes('gone_get-sum'), 'not included');
    const echo = tools.find((t) => t.name === 'ev_echo');
    assert.equal(echo.inputSchema.type, 'object');
    assert.ok(echo.inputSchema.properties.message);
  } finally {
    await client.close();
  }
});

test('a call, progress as it comes, and an elicitation answered by the client behind', async () => {
  const { client } = await connect({ elicitation: {} });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: { name: 'Ada' } };
  });
  try {
    const echoed = await client.callTool({ name: 'ev_echo', arguments: { message: 'through the gateway' } });
    assert.deepEqual(echoed.content, [{ type: 'text', text: 'Echo: through the gateway' }]);

    const progress = [];
    const long = await client.callTool({ name: 'ev_trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }, undefined, { onprogress: (p) => progress.push(p) });
    assert.equal(long.isError, undefined);
    assert.deepEqual(progress.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]]);

    const elicited = await client.callTool({ name: 'ev_trigger-elicitation-request', arguments: {} });
    assert.equal(asked.length, 1, 'the client was asked once');
    assert.ok(asked[0].message, 'with the upstream\'s message');
    assert.match(JSON.stringify(elicited.content), /Ada/);
  } finally {
    await client.close();
  }
});

test('the upstream restarts mid-session: the next call opens a new upstream session and works', async () => {
  const { client } = await connect();
  try {
    assert.deepEqual((await client.callTool({ name: 'ev_echo', arguments: { message: 'before' } })).content, [{ type: 'text', text: 'Echo: before' }]);
    await everything.close();
    everything = await startEverything(everythingPort);
    assert.deepEqual((await client.callTool({ name: 'ev_echo', arguments: { message: 'after' } })).content, [{ type: 'text', text: 'Echo: after' }]);
  } finally {
    await client.close();
  }
});

test('a gone, a silent and a nonsense upstream fail only their own tools, with what went wrong', async () => {
  const { client } = await connect();
  try {
    await goneAway.close();
    const gone = await client.callTool({ name: 'gone_echo', arguments: { message: 'x' } });
    assert.equal(gone.isError, true);
    assert.match(gone.content[0].text, /^The upstream MCP server "gone" failed: it could not be reached/);
    const started = Date.now();
    const quiet = await client.callTool({ name: 'silent_work', arguments: {} });
    assert.equal(quiet.isError, true);
    assert.match(quiet.content[0].text, /^The upstream MCP server "silent" failed: it did not answer within 1500 ms/);
    assert.ok(Date.now() - started < 10_000);
    const junk = await client.callTool({ name: 'junk_work', arguments: {} });
    assert.equal(junk.isError, true);
    assert.match(junk.content[0].text, /^The upstream MCP server "nonsense" failed: it sent something that is not JSON/);
    // The rest keeps working, and the failing upstreams' tools are still listed.
    assert.deepEqual((await client.callTool({ name: 'ev_echo', arguments: { message: 'still' } })).content, [{ type: 'text', text: 'Echo: still' }]);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('gone_echo') && names.includes('silent_work') && names.includes('junk_work'));
  } finally {
    await client.close();
  }
});

test('a call the client cancels is cancelled upstream too', async () => {
  const { client } = await connect();
  try {
    const controller = new AbortController();
    const call = client.callTool({ name: 'silent_work', arguments: { n: 1 } }, undefined, { signal: controller.signal });
    // Once the upstream has the call, the client gives up on it.
    const sent = () => silent.received.find((m) => m.method === 'tools/call' && m.params?.arguments?.n === 1);
    while (!sent()) await new Promise((r) => setTimeout(r, 20));
    controller.abort('changed my mind');
    await assert.rejects(call);
    const { id } = sent();
    let cancelled;
    for (let i = 0; i < 100 && !cancelled; i++) {
      cancelled = silent.received.find((m) => m.method === 'notifications/cancelled' && m.params?.requestId === id);
      if (!cancelled) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(cancelled, `the upstream was told: ${JSON.stringify(silent.received.map((m) => m.method))}`);
    assert.equal(cancelled.params.reason, 'the client cancelled the call');
  } finally {
    await client.close();
  }
});

test('a server of the Python SDK: a result, progress and log lines as they come, an elicitation', async () => {
  const { client } = await connect({ elicitation: {} });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Grace' } }));
  const logged = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logged.push(n.params.data));
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(['py_add', 'py_slow_count', 'py_ask_name'].every((n) => names.includes(n)), `${names}`);
    const sum = await client.callTool({ name: 'py_add', arguments: { a: 2, b: 3 } });
    assert.equal(sum.content[0].text, '5');
    await client.setLoggingLevel('info');
    const progress = [];
    const counted = await client.callTool({ name: 'py_slow_count', arguments: { steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.message) });
    assert.equal(counted.content[0].text, 'counted to 3');
    assert.deepEqual(progress, ['step 1/3', 'step 2/3', 'step 3/3']);
    assert.deepEqual(logged, ['did step 1', 'did step 2', 'did step 3']);
    const greeted = await client.callTool({ name: 'py_ask_name', arguments: {} });
    assert.equal(greeted.content[0].text, 'hello Grace');
  } finally {
    await client.close();
  }
});

test('resources, resource templates and prompts: listed, filtered, read and got through the upstream', async () => {
  const { client } = await connect();
  try {
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    assert.ok(uris.includes('demo://resource/static/document/architecture.md'), `${uris}`);
    assert.ok(!uris.includes('demo://resource/static/document/startup.md'), 'excluded by name');
    const read = await client.readResource({ uri: 'demo://resource/static/document/architecture.md' });
    assert.equal(read.contents[0].mimeType, 'text/markdown');
    assert.match(read.contents[0].text, /Architecture/);

    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['demo://resource/dynamic/text/{resourceId}']);
    const dynamic = await client.readResource({ uri: 'demo://resource/dynamic/text/7' });
    assert.equal(dynamic.contents[0].uri, 'demo://resource/dynamic/text/7');
    assert.match(dynamic.contents[0].text, /7/);

    const { prompts } = await client.listPrompts();
    const names = prompts.map((p) => p.name);
    assert.ok(names.includes('ev_simple-prompt') && names.includes('ev_args-prompt'), `${names}`);
    assert.ok(!names.some((n) => n.startsWith('ev_resource-')), 'excluded');
    const got = await client.getPrompt({ name: 'ev_args-prompt', arguments: { city: 'Paris' } });
    assert.match(JSON.stringify(got.messages), /Paris/);
    // The upstream's own refusal comes back as the JSON-RPC error it is.
    await assert.rejects(client.getPrompt({ name: 'ev_args-prompt', arguments: {} }), (e) => typeof e.code === 'number' && e.code < 0);
    await assert.rejects(client.readResource({ uri: 'demo://resource/static/document/startup.md' }), /not found|Resource/i);
  } finally {
    await client.close();
  }
});

test('the caller\'s identity reaches the upstream as the headers named, and the client\'s own token never does', async () => {
  const client = new Client({ name: 'through-mcp-edge', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL('/auth/mcp', worker.url), { requestInit: { headers: { Authorization: `Bearer ${TOKENS.BOT_TOKEN}` } } });
  await client.connect(transport);
  try {
    const done = await client.callTool({ name: 'rec_work', arguments: { job: 7 } });
    assert.deepEqual(done.content, [{ type: 'text', text: 'done' }]);
    const call = recorder.received.find((m) => m.method === 'tools/call' && m.params?.arguments?.job === 7);
    assert.equal(call.headers['x-user'], 'bot');
    assert.equal(call.headers.authorization, 'Bearer recorder-secret-5e1f');
    assert.ok(recorder.received.every((m) => !JSON.stringify(m.headers).includes(TOKENS.BOT_TOKEN)), 'the client\'s token never goes upstream');
    // The list was read as no one: no identity, but the deployment's credential.
    const listed = recorder.received.find((m) => m.method === 'tools/list');
    assert.equal(listed.headers.authorization, 'Bearer recorder-secret-5e1f');
    assert.ok(!listed.headers['x-user'], `no caller when listing: ${JSON.stringify(listed.headers)}`);
    // The gated upstream: not for bot (staff), and none of its resources for anyone.
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names, ['rec_work']);
    await assert.rejects(client.callTool({ name: 'adm_echo', arguments: { message: 'x' } }), /unknown tool/);
    const { resources } = await client.listResources();
    assert.deepEqual(resources, []);
  } finally {
    await client.close();
  }
});

test('a legacy HTTP+SSE upstream: listed, called, its progress and elicitation relayed', async () => {
  const { client } = await connect({ elicitation: {} });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Linus' } }));
  try {
    const names = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('old_')).sort();
    assert.deepEqual(names, ['old_echo', 'old_trigger-elicitation-request', 'old_trigger-long-running-operation']);
    assert.deepEqual((await client.callTool({ name: 'old_echo', arguments: { message: 'over SSE' } })).content, [{ type: 'text', text: 'Echo: over SSE' }]);
    const progress = [];
    const long = await client.callTool({ name: 'old_trigger-long-running-operation', arguments: { duration: 1, steps: 2 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    assert.equal(long.isError, undefined);
    assert.deepEqual(progress, [1, 2]);
    const elicited = await client.callTool({ name: 'old_trigger-elicitation-request', arguments: {} });
    assert.match(JSON.stringify(elicited.content), /Linus/);
  } finally {
    await client.close();
  }
});

test('prompts and templates of an upstream are completed by it; one that cannot complete suggests nothing', async () => {
  const { client } = await connect();
  try {
    const department = await client.complete({ ref: { type: 'ref/prompt', name: 'ev_completable-prompt' }, argument: { name: 'department', value: 'S' } });
    assert.deepEqual(department.completion.values, ['Sales', 'Support']);
    // The arguments already chosen reach the upstream as context.
    const lead = await client.complete({ ref: { type: 'ref/prompt', name: 'ev_completable-prompt' }, argument: { name: 'name', value: '' }, context: { arguments: { department: 'Marketing' } } });
    assert.deepEqual(lead.completion.values, ['Grace', 'Henry', 'Iris']);
    const id = await client.complete({ ref: { type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }, argument: { name: 'resourceId', value: '12' } });
    assert.deepEqual(id.completion.values, ['12']);
    assert.ok(client.getServerCapabilities().completions, 'the gateway offers completions');
    // An upstream without completions: nothing to suggest, under its prompt's upstream name.
    const none = await client.complete({ ref: { type: 'ref/prompt', name: 'ses_brief' }, argument: { name: 'topic', value: 'a' } });
    assert.deepEqual(none.completion, { values: [], total: 0, hasMore: false });
    const asked = sessions.received.find((m) => m.method === 'completion/complete');
    assert.deepEqual(asked.params.ref, { type: 'ref/prompt', name: 'brief' });
  } finally {
    await client.close();
  }
});

test('the client\'s log level reaches the upstream, set before the call, even as the client\'s stream opens', async () => {
  // The SDK opens its GET stream as it connects, without waiting: the level, set at once, races
  // with it. Three sessions, each calling at once.
  for (let round = 1; round <= 3; round++) {
    const { client, transport } = await connect();
    try {
      await client.setLoggingLevel('debug');
      await client.callTool({ name: 'ses_work', arguments: { level: round } });
      const call = sessions.received.find((m) => m.method === 'tools/call' && m.params.arguments.level === round);
      const upstream = call.headers['mcp-session-id'];
      const set = sessions.received.filter((m) => m.method === 'logging/setLevel' && m.headers['mcp-session-id'] === upstream);
      assert.deepEqual(set.map((m) => m.params), [{ level: 'debug' }], `round ${round}`);
      assert.ok(sessions.received.indexOf(set[0]) < sessions.received.indexOf(call), 'before the call');
      await transport.terminateSession();
    } finally {
      await client.close();
    }
  }
});

test('an upstream whose list changes: the clients listening are told, and then list its new tool', async () => {
  const { client } = await connect();
  let told = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { told += 1; });
  try {
    assert.equal(client.getServerCapabilities().tools.listChanged, true);
    const before = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(before.includes('gro_work') && !before.includes('gro_grown'), `${before}`);
    assert.equal(told, 0);
    const grew = await client.callTool({ name: 'gro_work', arguments: {} });
    assert.deepEqual(grew.content, [{ type: 'text', text: 'grew' }]);
    for (let i = 0; i < 200 && !told; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(told >= 1, 'told on the session\'s stream');
    const after = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(after.includes('gro_grown'), `${after}`);
  } finally {
    await client.close();
  }
});

test('the upstream session outlives the session object\'s memory: after the object restarts, the same one', async () => {
  const { client, transport } = await connect();
  try {
    assert.deepEqual((await client.callTool({ name: 'ses_work', arguments: { n: 1 } })).content, [{ type: 'text', text: 'done' }]);
    // A forced panic resets the session object's instance (the test build's hook).
    const crashed = await fetch(new URL('/mcp', worker.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': transport.sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'mcp-edge/test-panic' }),
      signal: AbortSignal.timeout(3000),
    }).catch((e) => e);
    assert.ok(crashed instanceof Error || crashed.status >= 500);
    assert.deepEqual((await client.callTool({ name: 'ses_work', arguments: { n: 2 } })).content, [{ type: 'text', text: 'done' }]);
    const calls = sessions.received.filter((m) => m.method === 'tools/call');
    const [first, second] = [1, 2].map((n) => calls.find((m) => m.params.arguments.n === n));
    assert.match(first.headers['mcp-session-id'], /^session-\d+$/);
    assert.equal(second.headers['mcp-session-id'], first.headers['mcp-session-id']);
    // The client ends its session: mcp-edge ends the upstream's.
    await transport.terminateSession();
    let ended;
    for (let i = 0; i < 100 && !ended; i++) {
      ended = sessions.received.find((m) => m.http === 'DELETE' && m.headers['mcp-session-id'] === first.headers['mcp-session-id']);
      if (!ended) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(ended, `DELETE of the upstream session: ${JSON.stringify(sessions.received.map((m) => [m.http, m.method, m.headers['mcp-session-id']]))}`);
  } finally {
    await client.close();
  }
});

test('a fresh isolate\'s concurrent first requests all find the upstream\'s tools (they wait for the one read under way)', async () => {
  const url = new URL('/mcp', worker.url);
  const sessions = await Promise.all(Array.from({ length: 8 }, () => openSession(url)));
  // A forced panic resets the instance: the lists read so far are gone with it.
  await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': sessions[0] }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp-edge/test-panic' }) });
  const replies = await Promise.all(sessions.map(async (sid, i) => {
    const res = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ev_echo', arguments: { message: `first ${i}` } } }, { 'mcp-session-id': sid });
    return res.json();
  }));
  for (const [i, reply] of replies.entries()) {
    assert.deepEqual(reply.result?.content, [{ type: 'text', text: `Echo: first ${i}` }], JSON.stringify(reply));
  }
});
