// Input requests through the proxy (issue 43): a 2026-07-28 client cannot be asked on a stream,
// so what an upstream MCP server asks during a call or a prompt becomes an InputRequiredResult,
// whose retry (inputResponses + requestState) is answered back to the upstream. Real parts: an
// upstream of the TypeScript SDK (2025-11-25, sessions) that asks for elicitation, sampling and
// roots during its calls and its prompt; a raw 2026-07-28 upstream that asks with a malformed
// InputRequiredResult; mcp-edge in front of them; and a second mcp-edge in front of the first
// (spoken to in 2026-07-28: its InputRequiredResults pass on, their state inside ours).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CreateMessageResultSchema, ElicitResultSchema, ListRootsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { CALLBACK_SIGNING_KEY, TOKENS, post, root, startMiniflare } from './harness.mjs';

const VERSION = '2026-07-28';
const CAPABILITIES = { elicitation: {}, sampling: {}, roots: {} };
const LOOPBACK = ['127.0.0.1', 'localhost'];

let sdk;
let raw;
let front;
let proxy;
/** How many times each SDK tool or prompt began, and how many of those were cancelled. */
const began = {};
let cancelled = 0;

const elicit = (message) => ({ method: 'elicitation/create', params: { message, requestedSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } } });

/** The SDK upstream: its tools and its prompt ask the client during the request. */
function sdkServer() {
  const server = new McpServer({ name: 'asking-upstream', version: '1.0.0' });
  const count = (name, extra) => {
    began[name] = (began[name] ?? 0) + 1;
    extra.signal.addEventListener('abort', () => cancelled++);
  };
  server.registerTool('confirm', { description: 'Asks before it acts', inputSchema: {} }, async (_args, extra) => {
    count('confirm', extra);
    const answer = await extra.sendRequest(elicit('Really?'), ElicitResultSchema);
    return { content: [{ type: 'text', text: `confirmed: ${answer.action} ${answer.content?.answer ?? ''}`.trim() }] };
  });
  server.registerTool('think', { description: 'Samples, then asks, then reads the roots', inputSchema: {} }, async (_args, extra) => {
    count('think', extra);
    const thought = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'Think' } }], maxTokens: 10 } }, CreateMessageResultSchema);
    const answer = await extra.sendRequest(elicit('And you?'), ElicitResultSchema);
    const roots = await extra.sendRequest({ method: 'roots/list', params: {} }, ListRootsResultSchema);
    return { content: [{ type: 'text', text: `${thought.content.text} / ${answer.content?.answer} / ${roots.roots.map((r) => r.uri).join(',')}` }] };
  });
  server.registerPrompt('brief', { description: 'Asks for its context' }, async (extra) => {
    count('brief', extra);
    const answer = await extra.sendRequest(elicit('What context?'), ElicitResultSchema);
    return { messages: [{ role: 'user', content: { type: 'text', text: `Context: ${answer.content?.answer}` } }] };
  });
  return server;
}

async function startSdk() {
  const sessions = new Map();
  const server = createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    let transport = id && sessions.get(id);
    if (!transport) {
      if (id) return res.writeHead(404).end();
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => sessions.set(sid, transport) });
      await sdkServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/mcp`, close: () => new Promise((r) => server.close(r)) };
}

/** A raw upstream that speaks 2026-07-28 (and answers the session-based list reading), whose
 *  tool `ask` answers with an InputRequiredResult that is malformed in the way its argument says. */
async function startRaw() {
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const m = JSON.parse(text || '{}');
    if (!('id' in m)) return res.writeHead(202).end();
    const answer = (result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
    switch (m.method) {
      case 'initialize':
        return answer({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } });
      case 'server/discover':
        return answer({ supportedVersions: [VERSION], capabilities: { tools: {} }, resultType: 'complete' });
      case 'tools/list':
        return answer({ tools: [{ name: 'ask', inputSchema: { type: 'object', properties: { how: { type: 'string' } } } }] });
      case 'tools/call': {
        const how = m.params.arguments?.how;
        // As 2026-07-28 refuses a client that lacks a capability: HTTP 400 and -32021.
        if (how === 'missing') return res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32021, message: 'Missing required client capability: sampling', data: { requiredCapabilities: { sampling: {} } } } }));
        const requests = how === 'method' ? { k: { method: 'tools/call', params: {} } } : how === 'params' ? { k: { method: 'elicitation/create', params: 'no' } } : how === 'empty' ? {} : { k: elicit('?') };
        return answer({ resultType: 'input_required', inputRequests: requests, ...(how === 'state' ? { requestState: { not: 'a string' } } : {}) });
      }
      default:
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } }));
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/mcp`, close: () => new Promise((r) => server.close(r)) };
}

function configFile(config) {
  const file = join(mkdtempSync(join(tmpdir(), 'mcp-edge-relay-')), 'mcp-edge.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

// The release build: nothing here needs the test hooks.
const dir = join(root, 'build');

before(async () => {
  sdk = await startSdk();
  raw = await startRaw();
  const upstreams = [
    { name: 'sdk', url: sdk.url, prefix: 'sdk_' },
    { name: 'raw', url: raw.url, prefix: 'raw_' },
  ];
  front = await startMiniflare({
    dir,
    config: configFile({
      servers: [
        { route: '/mcp', name: 'front', version: '1', privateUpstreams: LOOPBACK, upstreams },
        {
          route: '/auth/mcp',
          name: 'front-auth',
          version: '1',
          privateUpstreams: LOOPBACK,
          auth: { tokens: [{ secret: 'BOT_TOKEN', subject: 'bot' }, { secret: 'VISITOR_TOKEN', subject: 'visitor' }] },
          upstreams: [upstreams[0]],
        },
      ],
    }),
  });
  // A key of its own, as a second deployment has.
  proxy = await startMiniflare({
    dir,
    bindings: { CALLBACK_SIGNING_KEY: 'proxy-signing-key-3e9d-0f7a61c2b5' },
    config: configFile({ servers: [{ route: '/mcp', name: 'proxy', version: '1', privateUpstreams: LOOPBACK, upstreams: [{ name: 'front', url: new URL('/mcp', front.url).href }] }] }),
  });
});
after(async () => {
  await proxy?.mf.dispose();
  await front?.mf.dispose();
  await sdk?.close();
  await raw?.close();
});

/** A 2026-07-28 request to `url`, with the headers the revision requires. */
async function send(url, method, params, { capabilities = CAPABILITIES, headers = {} } = {}) {
  const name = method === 'resources/read' ? params.uri : params.name;
  const meta = { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientInfo': { name: 'relay-test', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': capabilities };
  const res = await post(url, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }, { accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': method, 'mcp-name': name, ...headers });
  return res.json();
}

const frontUrl = () => new URL('/mcp', front.url);
const proxyUrl = () => new URL('/mcp', proxy.url);
const accept = (answer) => ({ action: 'accept', content: { answer } });

test('a session-based upstream that asks during a call: an InputRequiredResult, and the retry answers it', async () => {
  const before = began.confirm ?? 0;
  const first = await send(frontUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {} });
  assert.equal(first.result.resultType, 'input_required', JSON.stringify(first));
  const [[key, request]] = Object.entries(first.result.inputRequests);
  assert.match(key, /^elicitation-create-[0-9a-f]{16}$/);
  assert.deepEqual(request, elicit('Really?'));
  assert.equal(typeof first.result.requestState, 'string');
  const done = await send(frontUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {}, inputResponses: { [key]: accept('yes') }, requestState: first.result.requestState });
  assert.equal(done.result.resultType, 'complete');
  assert.deepEqual(done.result.content, [{ type: 'text', text: 'confirmed: accept yes' }]);
  // The call was made again with the answer; the first, which waited for it, was cancelled there.
  assert.equal(began.confirm - before, 2);
  for (let i = 0; i < 50 && cancelled === 0; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(cancelled >= 1, 'the call that asked was cancelled upstream');
});

test('several rounds: earlier answers ride in the signed state; a retry that answers nothing is asked again', async () => {
  const call = (extra = {}) => send(frontUrl(), 'tools/call', { name: 'sdk_think', arguments: {}, ...extra });
  const one = await call();
  const [sampling] = Object.keys(one.result.inputRequests);
  assert.match(sampling, /^sampling-createMessage-/);
  const again = await call({ inputResponses: {}, requestState: one.result.requestState });
  assert.deepEqual(Object.keys(again.result.inputRequests), [sampling], 'the same question again');
  const two = await call({ inputResponses: { [sampling]: { role: 'assistant', content: { type: 'text', text: 'deep' }, model: 'm' } }, requestState: one.result.requestState });
  const [elicitation] = Object.keys(two.result.inputRequests);
  assert.match(elicitation, /^elicitation-create-/);
  const three = await call({ inputResponses: { [elicitation]: accept('me') }, requestState: two.result.requestState });
  const [roots] = Object.keys(three.result.inputRequests);
  assert.match(roots, /^roots-list-/);
  const done = await call({ inputResponses: { [roots]: { roots: [{ uri: 'file:///work' }] } }, requestState: three.result.requestState });
  assert.equal(done.result.content[0].text, 'deep / me / file:///work');
});

test('a prompt of an upstream that asks for input (input-required-result-non-tool-request, through a real upstream)', async () => {
  const first = await send(frontUrl(), 'prompts/get', { name: 'sdk_brief' });
  assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
  const [key] = Object.keys(first.result.inputRequests);
  const done = await send(frontUrl(), 'prompts/get', { name: 'sdk_brief', inputResponses: { [key]: accept('the test') }, requestState: first.result.requestState });
  assert.equal(done.result.resultType, 'complete');
  assert.equal(done.result.messages[0].content.text, 'Context: the test');
});

test('a client that cannot answer what the upstream asks gets -32021', async () => {
  const res = await send(frontUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {} }, { capabilities: { sampling: {} } });
  assert.equal(res.error?.code, -32021, JSON.stringify(res));
  assert.deepEqual(res.error.data, { requiredCapabilities: { elicitation: {} } });
});

test('abuse: an altered state, another request\'s, another principal\'s and an expired one are refused', async () => {
  const first = await send(frontUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {} });
  const [key] = Object.keys(first.result.inputRequests);
  const state = first.result.requestState;
  const retry = (requestState, { name = 'sdk_confirm', url = frontUrl(), headers, method = 'tools/call' } = {}) =>
    send(url, method, { name, ...(method === 'tools/call' ? { arguments: {} } : {}), inputResponses: { [key]: accept('x') }, requestState }, { headers });
  const [body, mac] = state.split('.');
  const claims = JSON.parse(Buffer.from(body, 'base64').toString('utf8'));
  const forged = Buffer.from(JSON.stringify({ ...claims, principal: 'token:bot' })).toString('base64');
  for (const [why, pending, message] of [
    ['altered body', retry(`${forged}.${mac}`), /integrity/],
    ['altered mac', retry(`${body}.${mac.replace(/^./, (c) => (c === '0' ? '1' : '0'))}`), /integrity/],
    ['not ours', retry('abc'), /malformed/],
    ['another request', retry(state, { method: 'prompts/get', name: 'sdk_brief' }), /another request/],
  ]) {
    const res = await pending;
    assert.equal(res.error?.code, -32602, `${why}: ${JSON.stringify(res)}`);
    assert.match(res.error.message, message, why);
  }
  // Another principal: the state of bot's call, retried by visitor.
  const authUrl = new URL('/auth/mcp', front.url);
  const bot = { authorization: `Bearer ${TOKENS.BOT_TOKEN}` };
  const theirs = await send(authUrl, 'tools/call', { name: 'sdk_confirm', arguments: {} }, { headers: bot });
  const stolen = await retry(theirs.result.requestState, { url: authUrl, headers: { authorization: `Bearer ${TOKENS.VISITOR_TOKEN}` } });
  assert.equal(stolen.error?.code, -32602);
  assert.match(stolen.error.message, /another principal/);
  // Expired: a state signed with the key, whose time has passed.
  const late = Buffer.from(JSON.stringify({ ...claims, expires_ms: Date.now() - 1000 })).toString('base64');
  const lateMac = createHmac('sha256', CALLBACK_SIGNING_KEY).update(`mrtr.${late}`).digest('hex');
  const expired = await retry(`${late}.${lateMac}`);
  assert.equal(expired.error?.code, -32602);
  assert.match(expired.error.message, /expired/);
  // The upstream never saw an answer to any of them.
  assert.ok(Object.values(began).length > 0);
});

test('abuse: a 2026-07-28 upstream\'s malformed InputRequiredResult ends the call with an error', async () => {
  for (const how of ['method', 'params', 'empty', 'state']) {
    const res = await send(frontUrl(), 'tools/call', { name: 'raw_ask', arguments: { how } });
    assert.equal(res.error?.code, -32603, `${how}: ${JSON.stringify(res)}`);
    assert.match(res.error.message, /malformed InputRequiredResult/);
  }
  // Its refusal of a client without the capability reaches the client as it is.
  const missing = await send(frontUrl(), 'tools/call', { name: 'raw_ask', arguments: { how: 'missing' } });
  assert.equal(missing.error?.code, -32021, JSON.stringify(missing));
  assert.deepEqual(missing.error.data, { requiredCapabilities: { sampling: {} } });
  // A well-formed one passes on, its state inside ours.
  const ok = await send(frontUrl(), 'tools/call', { name: 'raw_ask', arguments: { how: 'fine' } });
  assert.equal(ok.result.resultType, 'input_required');
  assert.deepEqual(ok.result.inputRequests, { k: elicit('?') });
});

test('through a second mcp-edge: the front speaks 2026-07-28 to it, its InputRequiredResults pass on and their retries are answered', async () => {
  const first = await send(proxyUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {} });
  assert.equal(first.result.resultType, 'input_required', JSON.stringify(first));
  const [key] = Object.keys(first.result.inputRequests);
  assert.match(key, /^elicitation-create-/, 'the front\'s key, as the front asked');
  const done = await send(proxyUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {}, inputResponses: { [key]: accept('through') }, requestState: first.result.requestState });
  assert.deepEqual(done.result.content, [{ type: 'text', text: 'confirmed: accept through' }]);
  const prompt = await send(proxyUrl(), 'prompts/get', { name: 'sdk_brief' });
  assert.equal(prompt.result?.resultType, 'input_required', JSON.stringify(prompt));
  const [pkey] = Object.keys(prompt.result.inputRequests);
  const got = await send(proxyUrl(), 'prompts/get', { name: 'sdk_brief', inputResponses: { [pkey]: accept('proxied') }, requestState: prompt.result.requestState });
  assert.equal(got.result.messages[0].content.text, 'Context: proxied');
  // The front's own state is no state of the proxy's (signed with another key).
  const direct = await send(frontUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {} });
  const mixed = await send(proxyUrl(), 'tools/call', { name: 'sdk_confirm', arguments: {}, inputResponses: { [key]: accept('x') }, requestState: direct.result.requestState });
  assert.equal(mixed.error?.code, -32602);
});
