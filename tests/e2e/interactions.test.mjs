// Seed 004's deployment as a shipped example (examples/interactions/mcp-edge.json): a chat-scoped
// server at /api/v1/interactions/{chat_uuid}/mcp, session cookies validated by the host
// application, bot users only, admin-only whitelist tools, NDJSON as the seed's clients speak it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startMiniflare, root, INIT, lines } from './harness.mjs';
import { startBackend, CHAT_UUID } from '../../examples/interactions/backend.mjs';

let backend;
let worker;
before(async () => {
  backend = await startBackend();
  worker = await startMiniflare({
    config: join(root, 'examples', 'interactions', 'mcp-edge.json'),
    bindings: { BACKEND_URL: backend.url, N8N_WEBHOOK_URL: `${backend.url}/webhook/n8n` },
  });
});
after(async () => {
  await worker.mf.dispose();
  await backend.close();
});

const mcp = (chat = CHAT_UUID) => new URL(`/api/v1/interactions/${chat}/mcp`, worker.url);
const cookie = (name) => ({ cookie: `theme=dark; session_id=${name}-session` });

async function ndjson(url, messages, headers) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', accept: 'application/x-ndjson', ...headers },
    body: messages.map((m) => JSON.stringify(m)).join('\n') + '\n',
  });
  const out = [];
  if (res.status === 200) for await (const line of lines(res)) if (line) out.push(JSON.parse(line));
  return { res, out };
}

async function connect(user, chat) {
  const { res, out } = await ndjson(mcp(chat), [INIT], cookie(user));
  assert.equal(res.status, 200, user);
  assert.equal(out[0].result.serverInfo.name, 'signal-bot-interactions');
  return { ...cookie(user), 'mcp-session-id': res.headers.get('mcp-session-id') };
}

test('a bot user lists and calls the chat tools; the whitelist tools are not there', async () => {
  const headers = await connect('bot');
  const { out } = await ndjson(mcp(), [
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'signal_send_message', arguments: { message: 'Hello, World!' } } },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'signal_get_whitelist', arguments: {} } },
  ], headers);
  const byId = Object.fromEntries(out.map((m) => [m.id, m]));
  assert.deepEqual(byId[1].result.tools.map((t) => t.name), ['signal_read_past_messages', 'signal_send_message', 'get_current_time', 'interaction_start', 'interaction_complete', 'n8n_trigger_workflow_webhook']);
  assert.deepEqual(byId[2].result.structuredContent, { sent: true, chat: CHAT_UUID, count: 2 });
  assert.deepEqual(byId[3].error, { code: -32602, message: 'Invalid params: unknown tool "signal_get_whitelist"' });
  assert.deepEqual(backend.chats.get(CHAT_UUID).messages.at(-1), { from: 'bot', text: 'Hello, World!' });
  // The route parameter reaches the templates; the session cookie does not reach the tools.
  const sent = backend.log.findLast((r) => r.path.endsWith('/messages'));
  assert.equal(sent.path, `/api/v1/interactions/${CHAT_UUID}/messages`);
  assert.equal(sent.cookie, undefined);
});

test('an admin bot also gets the whitelist tools', async () => {
  const headers = await connect('msgmate');
  const { out } = await ndjson(mcp(), [
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'signal_add_to_whitelist', arguments: { number: '+4915100000002' } } },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'signal_remove_from_whitelist', arguments: { number: '+4915100000001' } } },
  ], headers);
  const byId = Object.fromEntries(out.map((m) => [m.id, m]));
  assert.deepEqual(byId[1].result.structuredContent, { whitelist: ['+4915100000001', '+4915100000002'] });
  assert.deepEqual(byId[2].result.structuredContent, { whitelist: ['+4915100000002'] });
});

test("the introspection answer's subject reaches the tool's request: the backend knows who sent a message", async () => {
  for (const user of ['signal', 'msgmate']) {
    const headers = await connect(user);
    const { out } = await ndjson(mcp(), [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'signal_send_message', arguments: { message: `from ${user}` } } },
    ], headers);
    assert.equal(out[0].result.isError, undefined, JSON.stringify(out[0]));
    assert.deepEqual(backend.chats.get(CHAT_UUID).messages.at(-1), { from: user, text: `from ${user}` });
  }
});

test('people, strangers and other chats are refused before anything is dispatched', async () => {
  const person = await ndjson(mcp(), [INIT], cookie('alice'));
  assert.equal(person.res.status, 403);
  for (const headers of [{}, cookie('nobody'), { cookie: 'session_id=' }]) {
    const { res } = await ndjson(mcp(), [INIT], headers);
    assert.equal(res.status, 401, JSON.stringify(headers));
  }
  // The backend knows the chat but the bot is not in it.
  const otherChat = '87654321-4321-4321-4321-cba987654321';
  backend.chats.set(otherChat, { messages: [], whitelist: [] });
  const { res } = await ndjson(mcp(otherChat), [INIT], cookie('bot'));
  assert.equal(res.status, 401);
});

test("one bot's session is not another's", async () => {
  const botHeaders = await connect('bot');
  const { res } = await ndjson(mcp(), [{ jsonrpc: '2.0', id: 1, method: 'ping' }], { ...cookie('signal'), 'mcp-session-id': botHeaders['mcp-session-id'] });
  assert.equal(res.status, 404);
  const own = await ndjson(mcp(), [{ jsonrpc: '2.0', id: 1, method: 'ping' }], botHeaders);
  assert.deepEqual(own.out, [{ jsonrpc: '2.0', id: 1, result: {} }]);
});
