//! A stand-in for seed 004's host application: it owns the users, their session cookies and the
//! chats, answers mcp-edge's introspection request, and serves the chat tools' endpoints.
//!
//!   node examples/interactions/backend.mjs    (port: BACKEND_PORT, default 8789)
//!
//! Users: `bot` and `signal` are bot users; `msgmate` is a bot user and an admin; `alice` is a
//! person (no bot role). Their session cookies are `<name>-session`, members of chat CHAT_UUID.
//!
//! GET  /api/v1/interactions/{chat}/principal   Cookie: session_id=…   → {"user": {"name", "roles"}}
//! GET  /api/v1/interactions/{chat}/messages?limit=N                     → {"messages": [...]}
//! POST /api/v1/interactions/{chat}/messages    {"message": "…"}, X-Sender → {"sent": true, ...}
//! POST /api/v1/interactions/{chat}/callbacks/{start,complete}           → {"ok": true, ...}
//! GET|POST /api/v1/interactions/{chat}/whitelist, DELETE …/whitelist/{n} → {"whitelist": [...]}
//! GET  /api/v1/time?timezone=…  and  POST /webhook/n8n                  → JSON
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

export const CHAT_UUID = '12345678-1234-1234-1234-123456789abc';
const BOT_NAMES = ['signal', 'bot', 'msgmate'];
const ADMINS = ['msgmate'];

export function startBackend(port = 0) {
  const users = Object.fromEntries(['bot', 'signal', 'msgmate', 'alice'].map((name) => [`${name}-session`, { name, chats: [CHAT_UUID] }]));
  const chats = new Map([[CHAT_UUID, { messages: [{ from: 'alice', text: 'hello bot' }], whitelist: ['+4915100000001'] }]]);
  const log = [];
  const send = (res, status, value) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://backend');
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = text ? JSON.parse(text) : {};
    log.push({ method: req.method, path: url.pathname, query: url.search, body, cookie: req.headers.cookie });
    if (url.pathname === '/api/v1/time') return send(res, 200, { iso: new Date().toISOString(), timezone: url.searchParams.get('timezone') ?? 'UTC' });
    if (url.pathname === '/webhook/n8n') return send(res, 200, { triggered: true, chat: req.headers['x-chat'], payload: body.payload ?? null });
    const m = url.pathname.match(/^\/api\/v1\/interactions\/([^/]+)\/(.+)$/);
    const chat = m && chats.get(m[1]);
    if (!chat) return send(res, 404, { error: 'unknown chat' });
    const [, chatId, rest] = m;
    if (rest === 'principal') {
      // The host application validates its own session cookie, for this chat.
      const token = /(?:^|;\s*)session_id=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
      const user = users[token];
      if (!user || !user.chats.includes(chatId)) return send(res, 401, { error: 'not signed in to this chat' });
      const roles = [...(BOT_NAMES.includes(user.name) ? ['bot'] : ['user']), ...(ADMINS.includes(user.name) ? ['admin'] : [])];
      return send(res, 200, { user: { name: user.name, roles } });
    }
    if (rest === 'messages' && req.method === 'GET') return send(res, 200, { messages: chat.messages.slice(-Number(url.searchParams.get('limit') ?? 20)) });
    if (rest === 'messages' && req.method === 'POST') {
      // mcp-edge names the sender: the subject its introspection request was answered with.
      chat.messages.push({ from: req.headers['x-sender'], text: body.message });
      return send(res, 200, { sent: true, chat: chatId, count: chat.messages.length });
    }
    if (rest === 'callbacks/start' || rest === 'callbacks/complete') return send(res, 200, { ok: true, step: rest.split('/')[1], data: body.data ?? null });
    if (rest === 'whitelist' && req.method === 'GET') return send(res, 200, { whitelist: chat.whitelist });
    if (rest === 'whitelist' && req.method === 'POST') {
      chat.whitelist.push(body.number);
      return send(res, 200, { whitelist: chat.whitelist });
    }
    if (rest.startsWith('whitelist/') && req.method === 'DELETE') {
      chat.whitelist = chat.whitelist.filter((n) => n !== decodeURIComponent(rest.slice('whitelist/'.length)));
      return send(res, 200, { whitelist: chat.whitelist });
    }
    return send(res, 404, { error: `no route ${req.method} ${url.pathname}` });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    chats,
    log,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  })));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = await startBackend(Number(process.env.BACKEND_PORT ?? 8789));
  console.log(`backend on ${backend.url}; chat ${CHAT_UUID}; cookies: bot-session, msgmate-session (admin), alice-session (not a bot)`);
}
