// Redaction at every exit (issue 38, finding 5), black-box in workerd: a real upstream echoes a
// deployment secret (and a caller's own credential) in every spelling, and nothing that leaves
// mcp-edge shows it: a tool result, an error's excerpt cut at every offset of the secret, a reply
// truncated at the reader's cap at every offset, a line that is not JSON, streamed progress and
// log lines and what a resumed stream replays, notifications and errors relayed from an upstream
// MCP server, an elicitation request sent to the client, a callback's result, the stateless
// path, Durable Object storage, and the Worker's logs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INIT, freshPersistDir, post, sseEvents, startMiniflare } from './harness.mjs';
import { SPELLINGS, startTestUpstream } from './upstream.mjs';
import { startOwn } from './mcp_servers.mjs';

/** The deployment's secret: every character that a spelling treats specially. */
const SECRET = 'Rk5-ecr3t/key+v&l"q<x>y=z:w u';
/** A caller's own credential, forwarded upstream from `_meta.auth`. */
const CALLER = 'caller-Tk9/x+y&z"w<q>u';
const REDACTED = '[redacted]';
const LOOPBACK = ['127.0.0.1', 'localhost'];

const secretArgs = { spelling: { type: 'string' }, as: { type: 'string' }, pad: { type: 'integer' }, after: { type: 'integer' } };
const secretTool = (name, secret, extra = {}) => ({
  name,
  inputSchema: { type: 'object', properties: secretArgs, required: ['spelling', 'as', 'pad', 'after'] },
  http: { method: 'GET', url: '{+env.UPSTREAM_URL}/secret/{spelling}?as={as}&pad={pad}&after={after}', headers: { 'X-Secret': secret }, timeoutMs: 10000 },
  ...extra,
});
const tools = [
  secretTool('secret', '{env.REDACT_SECRET}'),
  secretTool('secret_cut', '{env.REDACT_SECRET}', { response: { maxBytes: 600, oversize: 'truncate' } }),
  secretTool('own', '{meta.auth.token}', { forwardMetaAuth: true }),
];
/** Reports back later, to the callback URL it is handed (the upstream's /jobs/<key>): a session's
 *  tool only. */
const job = { name: 'job', inputSchema: { type: 'object', properties: { key: { type: 'string' } } }, execution: 'callback', pendingTimeoutMs: 20000, http: { url: '{+env.UPSTREAM_URL}/jobs/{key}', headers: { 'X-Secret': '{env.REDACT_SECRET}' } } };

let upstream;
let leaky;
let unlisted;
let worker;
let persist;
before(async () => {
  upstream = await startTestUpstream();
  leaky = await startOwn('leaky');
  unlisted = await startOwn('unlisted');
  const upstreams = [
    { name: 'leaky', url: leaky.url, prefix: 'up_', headers: { 'X-Secret': '{env.REDACT_SECRET}' } },
    { name: 'unlisted', url: unlisted.url, prefix: 'no_', headers: { 'X-Secret': '{env.REDACT_SECRET}' } },
  ];
  const config = {
    servers: [
      { route: '/mcp', name: 'redaction', version: '1', privateUpstreams: LOOPBACK, tools: [...tools, job], upstreams },
      { route: '/stateless/mcp', name: 'redaction-stateless', version: '1', privateUpstreams: LOOPBACK, stateless: {}, tools },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-redaction-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  persist = freshPersistDir();
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url, persist, bindings: { REDACT_SECRET: SECRET } });
});
after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
  await leaky?.close();
  await unlisted?.close();
});

const mcp = () => new URL('/mcp', worker.url);
const stateless = () => new URL('/stateless/mcp', worker.url);

/** What must never show: the first 12 characters of each secret in each spelling, and a run of
 *  the characters its base64 spellings owe to it alone. */
function fingerprints(secret) {
  const start = secret.slice(0, 12);
  const prints = Object.entries(SPELLINGS).filter(([name]) => !name.startsWith('base64')).map(([, spell]) => spell(start));
  prints.push(Buffer.from(secret).toString('base64').slice(0, 12), Buffer.from(secret).toString('base64url').slice(0, 12));
  prints.push(SPELLINGS['base64-inside'](secret).slice(12, 24));
  return [...new Set(prints)];
}
const PRINTS = [...fingerprints(SECRET), ...fingerprints(CALLER)];

function assertClean(text, what) {
  for (const print of PRINTS) assert.ok(!text.includes(print), `${what} shows ${print}: ${text}`);
}

async function session(capabilities = {}) {
  const res = await post(mcp(), { ...INIT, params: { ...INIT.params, capabilities } });
  assert.equal(res.status, 200, await res.text());
  const sid = res.headers.get('mcp-session-id');
  assert.equal((await post(mcp(), { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid })).status, 202);
  return sid;
}

let nextId = 1;
const callBody = (name, args, meta) => ({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } });

/** A call answered as one JSON body: its result's first text. */
async function callText(url, name, args, headers = {}) {
  const res = await post(url, callBody(name, args), headers);
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return JSON.parse(body).result.content[0].text;
}

/** Runs `count` jobs, a few at a time. */
async function sweep(count, job) {
  for (let k = 0; k < count; k += 8) {
    await Promise.all(Array.from({ length: Math.min(8, count - k) }, (_, i) => job(k + i)));
  }
}

test('a tool result holds none of the secret\'s spellings', async () => {
  const sid = await session();
  for (const spelling of Object.keys(SPELLINGS)) {
    const text = await callText(mcp(), 'secret', { spelling, as: 'text', pad: 2, after: 2 }, { 'mcp-session-id': sid });
    assert.ok(text.includes(REDACTED), `${spelling}: ${text}`);
    assertClean(text, spelling);
  }
  const seen = upstream.seen.findLast((r) => r.url.startsWith('/secret/'));
  assert.equal(seen.headers['x-secret'], SECRET, 'the secret reached the upstream as it is');
});

test('an error\'s excerpt is cut after the secret is redacted, at every offset (stateless)', async () => {
  for (const spelling of ['raw', 'json', 'percent', 'html-named']) {
    const spelled = SPELLINGS[spelling](SECRET);
    await sweep(spelled.length + 1, async (k) => {
      // The excerpt's 512-byte cut lands k bytes into the spelled secret.
      const text = await callText(stateless(), 'secret', { spelling, as: 'error', pad: 512 - k, after: 600 });
      const redacted = `${'.'.repeat(512 - k)}${REDACTED}${'.'.repeat(600)}`;
      assert.equal(text, `The upstream answered HTTP 500 (text/plain): ${redacted.slice(0, 512)}…`, `${spelling} cut at ${k}`);
    });
  }
});

test('a reply truncated at the reader\'s cap shows at most the secret\'s first character, at every offset', async () => {
  const sid = await session();
  // How many bytes spell the secret's first character (base64: one character of its core).
  for (const [spelling, first] of [['raw', 1], ['json-u', 6], ['html-named', 1], ['base64', 1]]) {
    const spelled = SPELLINGS[spelling](SECRET);
    await sweep(spelled.length + 1, async (k) => {
      // The reader stops at 600 bytes, k bytes into the spelled secret.
      const text = await callText(mcp(), 'secret_cut', { spelling, as: 'text', pad: 600 - k, after: 2000 }, { 'mcp-session-id': sid });
      const shown = k <= first ? `${'.'.repeat(600 - k)}${spelled.slice(0, k)}` : `${'.'.repeat(600 - k)}${REDACTED}`;
      if (spelling === 'base64' && k >= spelled.length - 2) {
        // The characters after the core mix in the bytes that follow the secret.
        assert.ok(text.startsWith(`${'.'.repeat(600 - k)}${REDACTED}`), `${spelling} cut at ${k}: ${text}`);
      } else {
        assert.equal(text, `${shown}\n\n[mcp-edge: the reply was truncated at 600 bytes]`, `${spelling} cut at ${k}`);
      }
      if (k > first) assertClean(text, `${spelling} cut at ${k}`);
    });
  }
});

test('a line that is not JSON is redacted before it is cut, at every offset', async () => {
  const spelled = SPELLINGS.raw(SECRET);
  await sweep(spelled.length + 1, async (k) => {
    const text = await callText(stateless(), 'secret', { spelling: 'raw', as: 'garbage', pad: 200 - k, after: 100 });
    const redacted = `${'.'.repeat(200 - k)}${REDACTED}${'.'.repeat(100)}`;
    assert.equal(text, `The upstream sent a line that is not JSON: ${redacted.slice(0, 200)}`, `cut at ${k}`);
  });
});

/** Reads a POST's SSE stream to its end: its events, and the raw text. */
async function streamed(res) {
  const events = [];
  for await (const event of sseEvents(res)) events.push(event);
  return events;
}

test('streamed progress and log lines, and what a resumed stream replays, are redacted', async () => {
  const sid = await session();
  const headers = { 'mcp-session-id': sid, accept: 'application/json, text/event-stream' };
  const level = await post(mcp(), { jsonrpc: '2.0', id: nextId++, method: 'logging/setLevel', params: { level: 'debug' } }, { 'mcp-session-id': sid });
  assert.equal(level.status, 200, await level.text());
  for (const spelling of Object.keys(SPELLINGS)) {
    const body = callBody('secret', { spelling, as: 'stream', pad: 1, after: 1 }, { progressToken: `p-${spelling}` });
    const events = await streamed(await post(mcp(), body, headers));
    const messages = events.filter((e) => e.data).map((e) => JSON.parse(e.data));
    const methods = messages.map((m) => m.method ?? 'result');
    assert.deepEqual(methods, ['notifications/progress', 'notifications/message', 'result'], spelling);
    for (const text of [messages[0].params.message, messages[1].params.data.seen, messages[2].result.content[0].text]) {
      assert.ok(text.includes(REDACTED), `${spelling}: ${text}`);
    }
    assertClean(events.map((e) => e.data ?? '').join('\n'), spelling);
    // The event log kept for Last-Event-ID: resumed from the priming event, it replays all.
    const stream = events[0].id.split('-')[0];
    const resumed = await fetch(mcp(), { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': `${stream}-0` } });
    assert.equal(resumed.status, 200);
    const replayed = await streamed(resumed);
    assert.deepEqual(replayed.map((e) => e.data), events.filter((e) => e.data).map((e) => e.data), `${spelling}: the replay is what was sent`);
  }
});

test('a caller\'s own credential is hidden from its call\'s streamed messages as from its result', async () => {
  const sid = await session();
  const level = await post(mcp(), { jsonrpc: '2.0', id: nextId++, method: 'logging/setLevel', params: { level: 'info' } }, { 'mcp-session-id': sid });
  await level.text();
  for (const spelling of ['raw', 'json-u', 'percent', 'base64']) {
    const body = callBody('own', { spelling, as: 'stream', pad: 0, after: 0 }, { progressToken: 1, auth: { token: CALLER } });
    const events = await streamed(await post(mcp(), body, { 'mcp-session-id': sid, accept: 'application/json, text/event-stream' }));
    const data = events.map((e) => e.data ?? '').join('\n');
    assert.equal(data.split(REDACTED).length - 1, 3, `${spelling}: ${data}`);
    assertClean(data, spelling);
  }
  assert.equal(upstream.seen.findLast((r) => r.url.startsWith('/secret/')).headers['x-secret'], CALLER);
});

test('an elicitation request sent to the client is redacted', async () => {
  const sid = await session({ elicitation: {} });
  for (const spelling of ['raw', 'json', 'html-dec', 'base64url']) {
    const res = await post(mcp(), callBody('secret', { spelling, as: 'ask', pad: 0, after: 0 }), { 'mcp-session-id': sid, accept: 'application/json, text/event-stream' });
    const events = [];
    for await (const event of sseEvents(res)) {
      events.push(event);
      const message = event.data ? JSON.parse(event.data) : {};
      if (message.method === 'elicitation/create') {
        assert.ok(message.params.message.startsWith(`Confirm ${REDACTED}`), `${spelling}: ${message.params.message}`);
        const answer = await post(mcp(), { jsonrpc: '2.0', id: message.id, result: { action: 'accept', content: { ok: true } } }, { 'mcp-session-id': sid });
        assert.equal(answer.status, 202);
      }
    }
    const result = JSON.parse(events.at(-1).data).result;
    assert.equal(result.content[0].text, 'answered {"action":"accept","content":{"ok":true}}', spelling);
    assertClean(events.map((e) => e.data ?? '').join('\n'), spelling);
  }
});

test('an upstream MCP server\'s relayed notifications and its error excerpt are redacted', async () => {
  const sid = await session();
  const level = await post(mcp(), { jsonrpc: '2.0', id: nextId++, method: 'logging/setLevel', params: { level: 'info' } }, { 'mcp-session-id': sid });
  await level.text();
  const events = await streamed(await post(mcp(), callBody('up_work', {}, { progressToken: 'up' }), { 'mcp-session-id': sid, accept: 'application/json, text/event-stream' }));
  const messages = events.filter((e) => e.data).map((e) => JSON.parse(e.data));
  assert.deepEqual(messages.map((m) => m.params?.data ?? m.params?.message ?? m.result?.content[0].text), [`logged ${REDACTED}`, `progress ${REDACTED}`, `done ${REDACTED}`]);
  assertClean(JSON.stringify(messages), 'relayed messages');
  // Its HTTP error, quoted and cut at 200 characters, k characters into the secret.
  await sweep(SECRET.length + 1, async (k) => {
    const text = await callText(mcp(), 'up_work', { fail: true, pad: 200 - k }, { 'mcp-session-id': sid });
    const redacted = `${'.'.repeat(200 - k)}${REDACTED}${'.'.repeat(300)}`;
    assert.equal(text, `The upstream MCP server "leaky" failed: it answered HTTP 500 ${redacted.slice(0, 200)}.`, `cut at ${k}`);
  });
});

test('a callback\'s result is redacted, and so is its record while it waits', async () => {
  const sid = await session();
  for (const spelling of ['raw', 'json-in-json', 'percent', 'base64']) {
    const key = `job-${spelling}`;
    const response = post(mcp(), callBody('job', { key }), { 'mcp-session-id': sid });
    let callback;
    while (!(callback = upstream.jobs.get(key))) await new Promise((r) => setTimeout(r, 10));
    const report = JSON.stringify({ report: `done ${SPELLINGS[spelling](SECRET)}` });
    const applied = await fetch(callback, { method: 'POST', headers: { 'content-type': 'application/json' }, body: report });
    assert.equal(applied.status, 200, await applied.text());
    const text = await (await response).text();
    assert.ok(JSON.parse(text).result.structuredContent.report.startsWith(`done ${REDACTED}`), `${spelling}: ${text}`);
    assertClean(text, spelling);
  }
});

test('nothing stored and no log line holds the secret', async () => {
  // The discovery of an upstream whose tools/list quotes the secret logs why it failed.
  const listed = await post(mcp(), { jsonrpc: '2.0', id: nextId++, method: 'tools/list' }, { 'mcp-session-id': await session() });
  assert.ok(!(await listed.text()).includes('no_'), 'the unlisted upstream lists nothing');
  const logged = worker.logs.filter((line) => line.includes('its tool list could not be read'));
  assert.ok(logged.length > 0 && logged.every((line) => line.includes(REDACTED)), logged.join('\n'));
  for (const line of worker.logs) assertClean(line, 'a log line');
  // What the session objects keep (event logs, outboxes, tasks): their SQLite files as bytes.
  const files = (dir) => readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
  const stored = files(persist).map((path) => readFileSync(path).toString('latin1')).join('\n');
  assert.ok(stored.includes(REDACTED), 'the event logs were stored');
  assertClean(stored, 'Durable Object storage');
});
