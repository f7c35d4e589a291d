// Code mode's program at the edge (src/edge/code/mod.rs): the Dynamic Worker it runs in, loaded
// from the Worker Loader binding with no network and no bindings, and the `tools` object it
// holds, whose calls wait here, in a queue the Rust side takes them from, dispatches as the
// caller's own `tools/call`s, and answers. `sandbox.js` makes the isolate's code.
import { RpcTarget } from 'cloudflare:workers';

/** The compatibility date of the program's isolate: the Worker's own (wrangler.toml). */
const COMPATIBILITY_DATE = '2026-04-01';

/**
 * What the program's isolate holds as `tools`: one method. RPC carries only methods of the
 * class, so the run behind it (a private field) stays out of reach.
 */
class Tools extends RpcTarget {
  #run;
  constructor(run) {
    super();
    this.#run = run;
  }
  call(name, args) {
    return this.#run.ask(String(name), typeof args === 'string' ? args : '{}');
  }
}

/** One program's run: its asks, their answers, and its outcome. */
export class Run {
  #asks = [];
  #answers = new Map();
  #next = 0;
  #wake = null;
  #waiting = null;
  #closed = null;

  /** A tool call of the program: JSON text of `{ok}` or `{error}`, once answered. */
  ask(name, args) {
    if (this.#closed !== null) return Promise.resolve(JSON.stringify({ error: this.#closed }));
    return new Promise((resolve) => {
      const id = this.#next++;
      this.#answers.set(id, resolve);
      this.#asks.push({ id, name, args });
      const wake = this.#wake;
      this.#wake = this.#waiting = null;
      wake?.();
    });
  }

  /** Resolves once calls wait to be taken. */
  wait() {
    if (this.#asks.length > 0) return Promise.resolve();
    this.#waiting ??= new Promise((resolve) => (this.#wake = resolve));
    return this.#waiting;
  }

  /** The first call waiting, {id, name, args}, if any. */
  take() {
    return this.#asks.shift();
  }

  /** Answers the call `id` with JSON text. */
  settle(id, answer) {
    const resolve = this.#answers.get(id);
    this.#answers.delete(id);
    resolve?.(answer);
  }

  /** Ends the run: every call waiting and every later one is answered with `why`. */
  close(why) {
    if (this.#closed !== null) return;
    this.#closed = why;
    for (const resolve of this.#answers.values()) resolve(JSON.stringify({ error: why }));
    this.#answers.clear();
    this.#asks = [];
  }

  /** The outcome, as JSON text: {value, logs, dropped} or {error: {message, line, column, tool}, logs}. */
  done() {
    return this.outcome;
  }

  /** Runs the program `sandbox.prepare` made of the code in a new isolate, bounded by `limits`
   *  ({cpuMs, maxLogLines, maxResultBytes}: catalog::CodeLimits'). */
  static start(loader, prepared, limits) {
    const run = new Run();
    run.outcome = run.#run(loader, prepared, limits);
    return run;
  }

  async #run(loader, prepared, limits) {
    if (prepared.error) return JSON.stringify({ error: shapeError(prepared.error) });
    try {
      const worker = loader.load({
        compatibilityDate: COMPATIBILITY_DATE,
        mainModule: prepared.mainModule,
        modules: prepared.modules,
        globalOutbound: null,
        env: {},
        limits: { cpuMs: limits.cpuMs },
      });
      return JSON.stringify(shape(await worker.getEntrypoint().run({ tools: new Tools(this) }), limits));
    } catch (e) {
      return JSON.stringify({ error: { message: 'the program\'s isolate ended: ' + String(e?.message ?? e).slice(0, 1000) } });
    }
  }
}

/** Starts a run (`Run.start`), for the Rust side: catalog::CodeLimits' numbers as arguments. */
export function start(loader, prepared, cpuMs, maxLogLines, maxResultBytes) {
  return Run.start(loader, prepared, { cpuMs, maxLogLines, maxResultBytes });
}

/** What `sandbox.prepare` bounds a program by, from catalog::CodeLimits' numbers. */
export function sandbox_limits(steps, memoryBytes, logLines, resultBytes, toolCalls) {
  return { steps, memoryBytes, logLines, logBytes: 64 * 1024, resultBytes, toolCalls };
}

/**
 * The isolate's answer, which code the program could have changed made: only the fields
 * expected, of the types expected, within the bounds (the Rust side checks the result's size
 * again).
 */
function shape(outcome, limits) {
  const out = { logs: [], dropped: 0 };
  const logs = Array.isArray(outcome?.logs) ? outcome.logs : [];
  for (const line of logs) {
    if (out.logs.length < limits.maxLogLines && typeof line === 'string') out.logs.push(line.slice(0, 2000));
    else out.dropped++;
  }
  if (Number.isSafeInteger(outcome?.dropped) && outcome.dropped > 0) out.dropped += outcome.dropped;
  if (outcome?.error) out.error = shapeError(outcome.error);
  else if (typeof outcome?.value === 'string') {
    if (outcome.value.length > limits.maxResultBytes) out.error = { message: `the result is ${outcome.value.length} bytes of JSON, more than the ${limits.maxResultBytes} allowed: return less (filter, or pick fields)` };
    else out.value = outcome.value;
  }
  return out;
}

function shapeError(error) {
  const shaped = { message: String(error?.message ?? error).slice(0, 2000) };
  for (const key of ['line', 'column']) if (Number.isSafeInteger(error?.[key]) && error[key] > 0) shaped[key] = error[key];
  if (typeof error?.tool === 'string') shaped.tool = error.tool.slice(0, 200);
  return shaped;
}
