//! The soak run's traffic: one function per kind of call, each a client doing what real ones do,
//! and an `Op` per call that records how it ended. A call is answered (its result, or a tool
//! error), cancelled, or visibly failed (an HTTP error, a broken connection, a -32603); a
//! deferred call (queued, callback, task) must be answered in the end, whatever broke meanwhile:
//! its result is kept for the client, which collects it on a later stream.
import { ACCEPT, Session, readMessages, sseEvents } from './client.mjs';

export class Op {
  /** `deferred`: a queued or callback call (a task's too), which, once the server has taken it
   *  (its response began), must be answered in the end, whatever breaks meanwhile. */
  constructor(kind, { deferred = false } = {}) {
    this.kind = kind;
    this.deferred = deferred;
    this.mustAnswer = false;
    this.started = performance.now();
    this.answers = 0;
    this.latencyMs = undefined;
    this.isError = false;
    this.failed = undefined;
    this.cancelled = false;
  }

  answer(message) {
    this.answers++;
    if (this.answers > 1) return;
    this.latencyMs = performance.now() - this.started;
    this.isError = 'error' in message || message.result?.isError === true;
    if (this.isError) this.why = message.error?.message ?? message.result?.content?.[0]?.text;
  }

  fail(why) {
    this.failed ??= String(why?.cause?.code ?? why?.message ?? why);
  }

  /** How the call ended: answered, isError, cancelled, failed, or lost. */
  get outcome() {
    if (this.answers > 0) return this.isError ? 'isError' : 'answered';
    if (this.cancelled) return 'cancelled';
    if (this.failed && !this.mustAnswer) return 'failed';
    return 'lost';
  }
}

const pick = (list) => list[Math.floor(Math.random() * list.length)];
const between = (lo, hi) => Math.floor(lo + Math.random() * (hi - lo));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const call = (id, name, args, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } });

/**
 * POSTs a request of `session` and reads its stream: every message goes through the session (so
 * kept replies of earlier calls are counted), `onMessage` sees them too. A 2025-11-25 SSE stream
 * that breaks before its answer is resumed with `Last-Event-ID`, as the official SDKs do.
 */
async function exchange(session, op, message, accept, onMessage = () => {}) {
  let res;
  try {
    res = await session.send(message, accept);
  } catch (error) {
    return op.fail(error);
  }
  if (session.notFound(res.status)) return op.fail('session not found');
  if (res.status >= 400) {
    const body = await res.text().catch(() => '');
    // A trap's rescue answers 500 with a JSON-RPC error whose id is null.
    return op.fail(`HTTP ${res.status} ${body.slice(0, 120)}`);
  }
  op.mustAnswer = op.deferred;
  let lastEventId;
  const seen = (m, eventId) => {
    if (eventId) lastEventId = eventId;
    if (!m) return;
    if (m.id === null && m.error) op.fail(`stream ended by ${m.error.message}`);
    session.take(m);
    onMessage(m);
  };
  const read = await readMessages(res, seen);
  if (op.answers > 0 || op.cancelled) return;
  if (!read.ended) op.fail(read.error);
  const resumable = session.version >= '2025-11-25' && lastEventId && (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  for (let attempt = 0; resumable && op.answers === 0 && attempt < 20; attempt++) {
    try {
      const again = await fetch(session.url, { headers: { ...session.headers('text/event-stream'), 'last-event-id': lastEventId }, signal: AbortSignal.timeout(60_000) });
      if (again.status === 200) {
        await readMessages(again, seen);
        break;
      }
      await again.text();
      if (again.status !== 409) break;
    } catch {
      // The runtime is restarting: try again shortly.
    }
    await sleep(250);
  }
  if (op.answers === 0 && !op.failed) op.fail('the stream ended without an answer');
}

/** A plain call on the session, its reply framed as `accept` asks. */
function echo(kind, accept, weight) {
  return {
    weight,
    async run(ctx, session) {
      const op = ctx.op(kind);
      await exchange(session, op, call(session.request(op), 'echo', { message: kind }), accept);
    },
  };
}

/** The kinds of traffic, with their weights. Each runs one call on `session` (or its own). */
export const KINDS = {
  json: echo('json', ACCEPT.json, 4),
  sse: echo('sse', ACCEPT.sse, 3),
  ndjson: echo('ndjson', ACCEPT.ndjson, 3),
  stateless: {
    weight: 3,
    async run(ctx) {
      const op = ctx.op('stateless');
      try {
        const res = await fetch(ctx.statelessUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: ACCEPT.json, 'mcp-protocol-version': '2025-06-18' },
          body: JSON.stringify(call(1, 'echo', { message: 'stateless' })),
          signal: AbortSignal.timeout(30_000),
        });
        if (res.status >= 400) return op.fail(`HTTP ${res.status}`);
        await readMessages(res, (m) => m?.id === 1 && op.answer(m));
        if (!op.answers) op.fail('no answer');
      } catch (error) {
        op.fail(error);
      }
    },
  },
  progress: {
    weight: 2,
    async run(ctx, session) {
      const op = ctx.op('progress');
      const id = session.request(op);
      const token = `p-${session.id}-${id}`;
      let progress = 0;
      await exchange(session, op, call(id, 'progress', { steps: 3 }, { _meta: { progressToken: token } }), pick([ACCEPT.sse, ACCEPT.ndjson]), (m) => {
        if (m.method === 'notifications/progress' && m.params?.progressToken === token) progress++;
      });
      if (op.answers && !op.isError && progress === 0) ctx.stats.progressMissing++;
    },
  },
  faulty: {
    weight: 2,
    async run(ctx, session) {
      const op = ctx.op('faulty');
      const mode = pick(['error', 'hang', 'slow', 'ok']);
      ctx.stats.upstreamFaults[mode] = (ctx.stats.upstreamFaults[mode] ?? 0) + 1;
      await exchange(session, op, call(session.request(op), 'faulty', { mode }), pick([ACCEPT.json, ACCEPT.ndjson]));
    },
  },
  cancel: {
    weight: 1,
    async run(ctx, session) {
      const op = ctx.op('cancel');
      const id = session.request(op);
      let res;
      try {
        res = await session.send(call(id, 'hang', {}), ACCEPT.sse);
      } catch (error) {
        return op.fail(error);
      }
      if (session.notFound(res.status)) return op.fail('session not found');
      if (res.status !== 200) return op.fail(`HTTP ${res.status}`);
      const reading = readMessages(res, (m) => session.take(m));
      await sleep(between(100, 400));
      try {
        const cancel = await session.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'soak' } });
        await cancel.text();
      } catch (error) {
        op.fail(error);
      }
      const read = await reading;
      // The stream ends with no answer: the call was cancelled.
      if (op.answers === 0 && read.ended && !op.failed) {
        op.cancelled = true;
        session.awaiting.delete(id);
      } else if (!read.ended) op.fail(read.error);
    },
  },
  resume: {
    weight: 1,
    versions: ['2025-11-25'],
    async run(ctx, session) {
      const op = ctx.op('resume');
      // The tool closes its stream after 150 ms and answers later: the client resumes it.
      await exchange(session, op, call(session.request(op), 'late', { ms: between(300, 900) }), ACCEPT.sse);
      if (op.answers) ctx.stats.resumed++;
    },
  },
  legacy: {
    weight: 1,
    async run(ctx) {
      // The 2024-11-05 transport, as n8n's MCP Client Tool speaks it: the event stream, the
      // endpoint it names, and each answer on the stream.
      const op = ctx.op('legacy');
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), 30_000);
      try {
        const res = await fetch(ctx.legacyUrl, { headers: { accept: 'text/event-stream' }, signal: abort.signal });
        if (res.status !== 200) return op.fail(`HTTP ${res.status}`);
        const events = sseEvents(res)[Symbol.asyncIterator]();
        const first = await events.next();
        if (first.done || first.value.event !== 'endpoint') return op.fail('no endpoint event');
        const endpoint = new URL(first.value.data, ctx.legacyUrl);
        const postTo = async (message) => {
          const r = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(message), signal: abort.signal });
          await r.text();
          if (r.status !== 202) throw new Error(`POST /messages: HTTP ${r.status}`);
        };
        const answerTo = async (id) => {
          for (let next = await events.next(); !next.done; next = await events.next()) {
            const m = next.value.data ? JSON.parse(next.value.data) : undefined;
            if (m?.id === id) return m;
          }
          throw new Error('the event stream ended');
        };
        await postTo({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'soak-legacy', version: '1' } } });
        await answerTo(1);
        await postTo({ jsonrpc: '2.0', method: 'notifications/initialized' });
        await postTo(call(2, 'echo', { message: 'legacy' }));
        op.answer(await answerTo(2));
      } catch (error) {
        op.fail(error);
      } finally {
        clearTimeout(timer);
        abort.abort();
      }
    },
  },
  upstream: {
    weight: 2,
    async run(ctx, session) {
      const op = ctx.op('upstream');
      await exchange(session, op, call(session.request(op), 'ev_echo', { message: 'through' }), pick([ACCEPT.json, ACCEPT.sse]));
    },
  },
  queued: {
    weight: 1,
    async run(ctx, session) {
      const op = ctx.op('queued', { deferred: true });
      await exchange(session, op, call(session.request(op), 'queued_echo', { message: 'queued' }), pick([ACCEPT.json, ACCEPT.ndjson]));
    },
  },
  callback: {
    weight: 2,
    async run(ctx, session) {
      const op = ctx.op('callback', { deferred: true });
      const id = session.request(op);
      await exchange(session, op, call(id, 'callback_job', { delay: between(200, 2500), key: `${session.id}-${id}` }), pick([ACCEPT.json, ACCEPT.sse, ACCEPT.ndjson]));
    },
  },
  task: {
    weight: 1,
    versions: ['2025-11-25'],
    async run(ctx, session) {
      const op = ctx.op('task', { deferred: true });
      const id = session.next++;
      let taskId;
      try {
        const res = await session.send(call(id, 'callback_job', { delay: between(200, 2000), key: `${session.id}-t${id}` }, { task: { ttl: 120_000 } }), ACCEPT.json);
        if (session.notFound(res.status)) return op.fail('session not found');
        await readMessages(res, (m) => {
          if (m?.id === id) taskId = m.result?.task?.taskId;
          else session.take(m);
        });
      } catch (error) {
        // The task may exist, or not: without its id there is nothing to poll.
        return op.fail(error);
      }
      if (!taskId) return op.fail('no task');
      op.mustAnswer = true;
      // Polls as a Tasks client does, across restarts, until the task has ended; then its result.
      const until = Date.now() + 90_000;
      while (Date.now() < until) {
        await sleep(250);
        try {
          const get = await session.send({ jsonrpc: '2.0', id: session.next++, method: 'tasks/get', params: { taskId } }, ACCEPT.json, AbortSignal.timeout(10_000));
          if (session.notFound(get.status)) return op.fail('session not found');
          let status;
          await readMessages(get, (m) => {
            if (m?.result?.status) status = m.result.status;
            else session.take(m);
          });
          if (!['completed', 'failed', 'cancelled'].includes(status)) continue;
          const rid = session.next++;
          const result = await session.send({ jsonrpc: '2.0', id: rid, method: 'tasks/result', params: { taskId } }, ACCEPT.json, AbortSignal.timeout(10_000));
          await readMessages(result, (m) => {
            if (m?.id === rid) op.answer(m);
            else session.take(m);
          });
          if (op.answers) {
            // Asked once more, the answer must be the same task result, not a second run.
            return;
          }
        } catch {
          // The runtime is restarting: poll again.
        }
      }
    },
  },
  disconnect: {
    weight: 1,
    async run(ctx, session) {
      // A client that drops its stream while its call waits, and cannot resume (NDJSON): the
      // result must reach it on a later stream of the session.
      const op = ctx.op('disconnect', { deferred: true });
      const id = session.request(op);
      const key = `${session.id}-d${id}`;
      const leave = new AbortController();
      try {
        const res = await session.send(call(id, 'callback_job', { delay: between(300, 2000), key }), ACCEPT.ndjson, leave.signal);
        if (session.notFound(res.status)) return op.fail('session not found');
        if (res.status !== 200) return op.fail(`HTTP ${res.status}`);
        op.mustAnswer = true;
        for (let i = 0; i < 500 && !ctx.upstream.jobs.has(key); i++) await sleep(10);
        ctx.stats.disconnects++;
        leave.abort();
      } catch (error) {
        op.fail(error);
      }
    },
  },
};

export { Session };
