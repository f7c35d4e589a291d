// The Worker's entry, bundled in front of wasm-bindgen's glue by scripts/build.mjs: the handler
// object and the Durable Object classes, with the recovery after a trap that worker-build's shim
// gave (a panic or any trap ends the wasm instance; the next event runs on a fresh one). A plain
// object and plain classes rather than the shim's `WorkerEntrypoint` behind Proxies: each request
// then costs no entrypoint object, no Proxy and no extra await.
// (Plain `//` comments: esbuild keeps `//!` ones in the bundle.)

/** The events a Worker's handler object may serve, when the wasm exports them. */
const EVENTS = ['fetch', 'queue', 'scheduled'];

/**
 * The handler object and the Durable Object wrapper for the glue's exports `wasm`. `rescued(kind,
 * start)` runs each event so that a trap still answers it (src/edge/rescue.js); without one (the
 * bench's Rust floor) events run as they are.
 */
export function entry(wasm, rescued = (kind, start) => start()) {
  Error.stackTraceLimit = 100;
  // wasm-bindgen's state object (worker's inline JS): `criticalError` asks for a fresh instance,
  // `instanceId` counts them. src/edge/rescue.js sets `criticalError` on a panic too.
  const state = wasm.__worker_init_state();

  /** A fresh instance, when the last one trapped: before any event touches the module. */
  function reinit() {
    if (!state.criticalError) return;
    console.log('Reinitializing Wasm application');
    wasm.__wbg_reset_state();
    state.criticalError = false;
    state.instanceId++;
  }

  /** A trap (a `WebAssembly.RuntimeError`) makes the next event reinitialize. */
  function critical(error) {
    if (error instanceof WebAssembly.RuntimeError) {
      console.error('Critical', error);
      state.criticalError = true;
    }
  }
  addEventListener('error', (event) => critical(event.error));

  /** `call()` with a trap marked, whether it throws or its promise rejects. */
  function marked(call) {
    try {
      const result = call();
      return typeof result?.then === 'function' ? result.then(undefined, (error) => { critical(error); throw error; }) : result;
    } catch (error) {
      critical(error);
      throw error;
    }
  }

  const handlers = {};
  for (const event of EVENTS) {
    const handler = wasm[event];
    if (typeof handler !== 'function') continue;
    handlers[event] = (arg, env, ctx) => {
      reinit();
      return rescued(event, () => marked(() => handler(arg, env, ctx)));
    };
  }

  /**
   * The Durable Object class `Inner` (a wasm-bindgen class): each object holds one of `Inner`,
   * made anew when the module was reinitialized since (the old one points into the dead
   * instance), and each method runs through `rescued` under its own name, so a trap answers a
   * `fetch` with a 500 and fails an `alarm`, which the runtime retries.
   */
  function durableObject(Inner) {
    // Symbols: the runtime sees no new property names on the object.
    const args = Symbol('args');
    const made = Symbol('instanceId');
    const inner = Symbol('inner');
    /** The object for the live instance. */
    const current = (self) => {
      if (self[made] !== state.instanceId) {
        self[inner] = new Inner(...self[args]);
        self[made] = state.instanceId;
      }
      return self[inner];
    };
    class Rescued {
      constructor(...given) {
        try {
          reinit();
          this[args] = given;
          this[made] = state.instanceId;
          this[inner] = new Inner(...given);
        } catch (error) {
          state.criticalError = true;
          throw error;
        }
      }
    }
    for (const name of Object.getOwnPropertyNames(Inner.prototype)) {
      if (name === 'constructor' || typeof Object.getOwnPropertyDescriptor(Inner.prototype, name).value !== 'function') continue;
      Rescued.prototype[name] = function (...params) {
        reinit();
        return rescued(name, () => marked(() => current(this)[name](...params)));
      };
    }
    return Rescued;
  }

  return { handlers, durableObject };
}
