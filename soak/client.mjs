//! The soak run's MCP client: plain fetch, so that every message on every stream is seen and
//! counted. A `Session` knows which of its requests still wait for an answer, from whatever
//! stream it comes (the outbox delivers a reply ahead of a later request's own), and notices an
//! answer that comes twice.
import { lines, sseEvents } from '../tests/e2e/harness.mjs';

export { sseEvents };

/** Reads a response as messages: one JSON body, SSE `data:` events (with their ids), or NDJSON
 *  lines. `onMessage(message, eventId)` sees each as it comes (an SSE event with no data, such
 *  as a priming event, as `undefined` with its id); resolves to how the body ended:
 *  `{ended: true}`, or `{ended: false, error}` when the connection broke. */
export async function readMessages(res, onMessage) {
  const type = res.headers.get('content-type') ?? '';
  try {
    if (type.startsWith('text/event-stream')) {
      for await (const event of sseEvents(res)) onMessage(event.data ? JSON.parse(event.data) : undefined, event.id);
    } else if (type.startsWith('application/x-ndjson')) {
      for await (const line of lines(res)) if (line.trim()) onMessage(JSON.parse(line), undefined);
    } else {
      const text = await res.text();
      if (text.trim()) {
        const parsed = JSON.parse(text);
        for (const m of Array.isArray(parsed) ? parsed : [parsed]) onMessage(m, undefined);
      }
    }
    return { ended: true };
  } catch (error) {
    return { ended: false, error };
  }
}

export const ACCEPT = {
  json: 'application/json, text/event-stream',
  sse: 'text/event-stream',
  ndjson: 'application/x-ndjson',
};

/** A session of the soak run, on `url`, speaking `version`. */
export class Session {
  constructor(url, version, stats) {
    this.url = url;
    this.version = version;
    this.stats = stats;
    this.id = undefined;
    this.next = 1;
    /** Request ids still waiting for an answer → the op they answer. */
    this.awaiting = new Map();
    /** Request ids answered, to notice an answer that comes twice. */
    this.answered = new Set();
    this.lost = false;
  }

  async open() {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT.json },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: this.version, capabilities: { tasks: {} }, clientInfo: { name: 'soak', version: '1' } } }),
      signal: AbortSignal.timeout(10_000),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status}`);
    this.id = res.headers.get('mcp-session-id');
    const ack = await this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await ack.text();
  }

  headers(accept) {
    return { 'content-type': 'application/json', accept, 'mcp-session-id': this.id, 'mcp-protocol-version': this.version };
  }

  send(message, accept = ACCEPT.json, signal = AbortSignal.timeout(60_000)) {
    return fetch(this.url, { method: 'POST', headers: this.headers(accept), body: JSON.stringify(message), signal });
  }

  /** A new request id, registered as awaiting for `op`. */
  request(op) {
    const id = this.next++;
    this.awaiting.set(id, op);
    op.session = this.id;
    op.request = id;
    return id;
  }

  /** Takes any message of the session: an answer to an awaiting request resolves its op, one to
   *  a request already answered is a duplicate. Returns the message's id when it answered. */
  take(message) {
    if (!message || message.id === undefined || message.id === null || !('result' in message || 'error' in message)) return undefined;
    if (this.answered.has(message.id)) {
      this.stats.duplicated++;
      return message.id;
    }
    const op = this.awaiting.get(message.id);
    if (!op) return undefined;
    this.awaiting.delete(message.id);
    this.answered.add(message.id);
    op.answer(message);
    return message.id;
  }

  /** Whether a response says the session is gone. */
  notFound(status) {
    if (status === 404) this.lost = true;
    return status === 404;
  }

  /** POSTs a ping on a stream (NDJSON), which carries any kept reply ahead of its own. */
  async collect() {
    const res = await this.send({ jsonrpc: '2.0', id: `ping-${this.next++}`, method: 'ping' }, ACCEPT.ndjson, AbortSignal.timeout(15_000));
    if (this.notFound(res.status)) return;
    await readMessages(res, (m) => this.take(m));
  }
}
