//! SSE through whatever sits in front: a stream's events must arrive as they are sent, not all
//! at once when it ends (a buffering proxy holds them, and the connector times out or sees
//! nothing until the call is over). Judged from the SSE replies the session already received,
//! then from the GET stream when none of them could tell.
import { failed, passed, skipped } from './faults.mjs';
import { send } from './http.mjs';

/** Within this many ms of the end counts as "at the end". */
const BURST_MS = 40;
/** A stream open at least this long can tell buffering from a fast answer. */
const TELLING_MS = 300;

/** 'streamed', 'buffered' or undefined (cannot tell), with words. */
export function judge(stream) {
  const { events, endMs } = stream;
  if (!events.length) return { verdict: undefined, words: `${stream.label}: no events` };
  const first = events[0].at;
  if (endMs - first >= 100) return { verdict: 'streamed', words: `${stream.label}: first event ${Math.round(first)} ms after the request, ${Math.round(endMs - first)} ms before the end` };
  if (events.length >= 2 && endMs >= TELLING_MS && endMs - first <= BURST_MS) {
    return { verdict: 'buffered', words: `${stream.label}: all ${events.length} events arrived together ${Math.round(first)} ms after the request, as the stream ended` };
  }
  return { verdict: undefined, words: `${stream.label}: over in ${Math.round(endMs)} ms, too quick to tell` };
}

export async function sse(ctx, session) {
  const TITLE = 'SSE events arrive before the stream ends';
  if (!session) return skipped('sse', TITLE, 'no session');
  const judged = session.streams.map(judge);
  const buffered = judged.find((j) => j.verdict === 'buffered');
  if (buffered) return failed('sse', TITLE, 'sse-buffered', buffered.words);
  const streamed = judged.find((j) => j.verdict === 'streamed');
  if (streamed) return passed('sse', TITLE, streamed.words);
  // The GET stream stays open: its first event (a 2025-11-25 server primes each stream) must
  // come through within the bound.
  const headers = session.headers({ accept: 'text/event-stream' });
  delete headers['content-type'];
  const { res, error } = await send(ctx.url, { method: 'GET', headers }, ctx.timeoutMs);
  const tried = judged.map((j) => j.words);
  if (error || res.status !== 200 || !/text\/event-stream/i.test(res.headers.get('content-type') ?? '')) {
    await res?.body?.cancel();
    return skipped('sse', TITLE, `${tried.length ? `${tried.join('; ')}; ` : 'no SSE reply; '}GET stream: ${error ?? `HTTP ${res.status}`}, so nothing to time`);
  }
  const reader = res.body.getReader();
  const bound = ctx.sseWaitMs;
  const first = await Promise.race([reader.read().then((r) => (r.done ? 'ended' : 'data')), new Promise((r) => setTimeout(() => r('quiet'), bound).unref())]);
  await reader.cancel().catch(() => {});
  if (first === 'data') return passed('sse', TITLE, `GET stream: first bytes within ${bound / 1000} s`);
  if (first === 'ended') return skipped('sse', TITLE, 'GET stream ended at once, with nothing');
  // Servers may send nothing on it until they have something (the TypeScript SDK does), so
  // silence is not proof of buffering.
  return skipped('sse', TITLE, `${tried.length ? `${tried.join('; ')}; ` : ''}GET stream open, nothing within ${bound / 1000} s: cannot tell`);
}
