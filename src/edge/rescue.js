// The rescue of requests when the module traps. A panic (or any other trap) ends the wasm
// instance: the futures of every request it was serving never run again, so without this their
// clients would wait until workerd gives up on them, minutes later. `src/edge/rescue.rs` calls
// `trapped` from the panic hook, just before a panic traps, and from wasm-bindgen's abort
// handler, which sees every trap (an `unreachable`, a stack overflow). Within a fifth of a second
// every request still waiting is answered with a 500 and a JSON-RPC -32603, and every open stream
// ends with that error in the stream's framing. The next request runs on a fresh instance (the shim's reinit),
// and sessions resume from their Durable Object's storage. tests/e2e/panic.test.mjs forces each.

/** How an interrupted request is answered: the request's id is unknown here, so `null`. */
export const FAILED = JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code: -32603, message: 'Internal error: the server failed while serving this request. Sessions are kept: send the request again.' },
});

/** Bumped by each trap. */
let traps = 0;
/** How often a waiting request or an open stream looks for a trap. */
const POLL_MS = 200;

/**
 * Calls `onTrap` once a trap happens; returns what stops the watch. workerd runs a request's
 * promise reactions and I/O only in the request's own context, and a trap usually happens in
 * another request's: so each request watches from a timer of its own, rather than being answered
 * from wherever the trap happened (a request resolved from another context is never answered,
 * and the runtime reports it as hung).
 */
function watch(onTrap) {
  const seen = traps;
  const timer = setInterval(() => {
    if (traps === seen) return;
    clearInterval(timer);
    onTrap();
  }, POLL_MS);
  return () => clearInterval(timer);
}

/** Every waiting request and open stream hears of the trap at its next look. */
export function trapped() {
  traps++;
  // Whatever trapped, the next request must find a fresh instance (scripts/entry.js reads this:
  // the worker crate's own JS made this global the state object the wasm exports).
  if (globalThis.__worker_init_state) globalThis.__worker_init_state.criticalError = true;
}

/** The error message itself, for the streams' framing (`src/edge/writer.rs`). */
export function failed() {
  return FAILED;
}

/** Open streams: writer → what stops its watch. */
const streams = new Map();

/** A stream is open on `writer`: should the module trap, `chunk` (a Uint8Array) ends it. */
export function stream_opened(writer, chunk) {
  streams.set(
    writer,
    watch(() => {
      streams.delete(writer);
      writer.write(chunk).then(() => writer.close()).catch(() => {});
    }),
  );
}

/** The stream on `writer` ended, or its writer was dropped. */
export function stream_closed(writer) {
  streams.get(writer)?.();
  streams.delete(writer);
}

/**
 * Runs a handler (`start` returns its promise) so that a trap still answers it: a `fetch` with
 * the 500 above, anything else (an alarm, a queue batch) by rejecting, which the runtime retries.
 * The build (scripts/build.mjs) routes the Worker's and the Durable Objects' handlers through it.
 */
export function rescued(kind, start) {
  const failure = () => (kind === 'fetch' ? new Response(FAILED, { status: 500, headers: { 'content-type': 'application/json' } }) : Promise.reject(new Error('the module trapped while serving this event')));
  let stop = () => {};
  const rescue = new Promise((resolve) => {
    stop = watch(() => resolve(failure()));
  });
  const seen = traps;
  let running;
  try {
    running = start();
  } catch (error) {
    stop();
    // A trap in the handler's synchronous part: answered here, in the request's own context.
    if (traps !== seen) return Promise.resolve(failure());
    throw error;
  }
  // A method that returns no promise has nothing left to rescue.
  if (typeof running?.then !== 'function') {
    stop();
    return running;
  }
  return Promise.race([running, rescue]).finally(stop);
}
