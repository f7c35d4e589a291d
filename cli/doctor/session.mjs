//! With the token: what a connector does next. `initialize`, `notifications/initialized`,
//! `tools/list` and one call, over Streamable HTTP with the session id and protocol version
//! headers. Every SSE reply is kept, with its timing, for the buffering check.
import { failed, passed, skipped } from './faults.mjs';
import { INITIALIZE, MCP_HEADERS, clip } from './challenge.mjs';
import { parseChallenges, readReply, responseTo, send, text } from './http.mjs';

export class Session {
  constructor(ctx, token) {
    this.ctx = ctx;
    this.token = token;
    this.sessionId = undefined;
    this.protocolVersion = undefined;
    this.streams = []; // { label, events, endMs }
    this.nextId = 2;
  }

  headers(extra = {}) {
    const h = { ...MCP_HEADERS, ...extra };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    if (this.protocolVersion) h['mcp-protocol-version'] = this.protocolVersion;
    return h;
  }

  /** POSTs a message; `{ res, reply, response, error }` with `response` the JSON-RPC answer. */
  async post(message, label) {
    const { res, error, started } = await send(this.ctx.url, { method: 'POST', headers: this.headers(), body: JSON.stringify(message) }, this.ctx.timeoutMs);
    if (error) return { error };
    if (message.id === undefined || res.status !== 200) return { res, body: await text(res) };
    const reply = await readReply(res, started);
    if (reply.kind === 'sse') this.streams.push({ label, events: reply.events, endMs: reply.endMs });
    return { res, reply, response: responseTo(reply.messages, message.id) };
  }

  async initialize() {
    const TITLE = 'initialize and notifications/initialized';
    const first = await this.post(INITIALIZE(1), 'initialize');
    if (first.error) return failed('initialize', TITLE, 'unreachable', first.error);
    const { res } = first;
    if (res.status === 401 || (res.status === 403 && res.headers.get('www-authenticate'))) {
      const bearer = parseChallenges(res.headers.get('www-authenticate')).find((c) => c.scheme.toLowerCase() === 'bearer');
      const why = bearer?.params.error ? `${bearer.params.error}${bearer.params.error_description ? `: ${bearer.params.error_description}` : ''}` : res.headers.get('www-authenticate') ? 'no error given' : 'no WWW-Authenticate';
      return failed('initialize', TITLE, 'token-rejected', `HTTP ${res.status} with the fresh token (${why})`);
    }
    if (res.status === 403) return failed('initialize', TITLE, 'blocked-in-front', `HTTP 403 with the token and no WWW-Authenticate: ${clip(first.body)}`);
    if (res.status !== 200) return failed('initialize', TITLE, 'initialize-failed', `HTTP ${res.status}: ${clip(first.body)}`);
    const answer = first.response;
    if (!answer?.result) return failed('initialize', TITLE, 'initialize-failed', answer?.error ? `JSON-RPC error ${answer.error.code}: ${answer.error.message}` : `no reply to initialize in ${first.reply.kind === 'sse' ? 'the SSE stream' : clip(first.reply.body)}`);
    this.sessionId = res.headers.get('mcp-session-id') ?? undefined;
    this.protocolVersion = answer.result.protocolVersion;
    const info = answer.result.serverInfo ?? {};
    const initialized = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    if (initialized.error) return failed('initialize', TITLE, 'unreachable', `notifications/initialized: ${initialized.error}`);
    if (initialized.res.status !== 202 && initialized.res.status !== 200 && initialized.res.status !== 204) {
      return failed('initialize', TITLE, 'initialize-failed', `notifications/initialized: HTTP ${initialized.res.status} (expected 202): ${clip(initialized.body)}`);
    }
    this.capabilities = answer.result.capabilities ?? {};
    return passed('initialize', TITLE, `protocol ${this.protocolVersion}, server ${info.name ?? '?'} ${info.version ?? ''}`.trim() + `, ${this.sessionId ? 'a session id' : 'no session id (stateless)'}, ${first.reply.kind === 'sse' ? 'answered as SSE' : 'answered as JSON'}`);
  }

  async listTools() {
    const TITLE = 'tools/list';
    const tools = [];
    let cursor;
    for (let page = 0; page < 10; page++) {
      const r = await this.post({ jsonrpc: '2.0', id: this.nextId++, method: 'tools/list', params: cursor ? { cursor } : {} }, 'tools/list');
      if (r.error) return { step: failed('tools-list', TITLE, 'unreachable', r.error) };
      if (r.res.status !== 200) return { step: failed('tools-list', TITLE, 'tools-list-failed', `HTTP ${r.res.status}: ${clip(r.body)}`) };
      if (!r.response?.result) return { step: failed('tools-list', TITLE, 'tools-list-failed', r.response?.error ? `JSON-RPC error ${r.response.error.code}: ${r.response.error.message}` : 'no reply') };
      tools.push(...(r.response.result.tools ?? []));
      cursor = r.response.result.nextCursor;
      if (!cursor) break;
    }
    const names = tools.map((t) => t.name);
    this.tools = tools;
    return { step: passed('tools-list', TITLE, `${tools.length} tool${tools.length === 1 ? '' : 's'}${names.length ? `: ${clip(names.join(', '), 160)}` : ''}`) };
  }

  /** The tool to call: `--call`, else the first whose input schema requires nothing. */
  pick() {
    if (this.ctx.call) return { name: this.ctx.call, args: this.ctx.args ?? {} };
    const tool = (this.tools ?? []).find((t) => !(t.inputSchema?.required?.length));
    return tool ? { name: tool.name, args: {} } : undefined;
  }

  async callOne() {
    const TITLE = 'tools/call (one call)';
    if (!this.tools) return skipped('call', TITLE, 'no tool list');
    const chosen = this.pick();
    if (!chosen) return skipped('call', TITLE, 'every tool requires arguments: name one with --call NAME --args JSON');
    // A progress token, as connectors send, so a server that streams progress streams here too.
    const message = { jsonrpc: '2.0', id: this.nextId++, method: 'tools/call', params: { name: chosen.name, arguments: chosen.args, _meta: { progressToken: 'mcp-edge-doctor' } } };
    const r = await this.post(message, `tools/call ${chosen.name}`);
    if (r.error) return failed('call', TITLE, 'unreachable', r.error);
    if (r.res.status !== 200) return failed('call', TITLE, 'call-failed', `${chosen.name}: HTTP ${r.res.status}: ${clip(r.body)}`);
    if (!r.response) return failed('call', TITLE, 'call-failed', `${chosen.name}: no reply to the call`);
    if (r.response.error) return failed('call', TITLE, 'call-failed', `${chosen.name}: JSON-RPC error ${r.response.error.code}: ${r.response.error.message}`);
    const result = r.response.result ?? {};
    const kinds = (result.content ?? []).map((c) => c.type);
    // The content itself is not shown: a tool's output may be private. Its error text is.
    const text = result.isError ? (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join(' ') : '';
    return passed('call', TITLE, `${chosen.name}: ${result.isError ? `isError: ${clip(text, 160)}` : 'answered'} (${kinds.length ? kinds.join(', ') : 'no content'}${result.structuredContent ? ', structuredContent' : ''}; ${r.reply.kind === 'sse' ? `SSE, ${r.reply.events.length} events` : 'JSON'})`, result.isError ? { warning: 'the tool reported an error; the connection itself works' } : {});
  }

  /** Ends the session, as a client that is done does. */
  async close() {
    if (!this.sessionId) return;
    await send(this.ctx.url, { method: 'DELETE', headers: this.headers() }, this.ctx.timeoutMs);
  }
}
