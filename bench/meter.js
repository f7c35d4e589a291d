// The bench's meter, loaded into workerd in front of a Workers peer (bench/meter.mjs writes the
// entry that wraps it): counts what Cloudflare bills a Durable Object for, as the peer runs, so
// the cost table (bench/cost.mjs) rests on counts rather than on what each peer is believed to do.
//   - requests: every call on a Durable Object stub (`fetch` or an RPC method), each one billed
//     request, counted where the Worker (or another object) makes it;
//   - duration: the wall time each object had at least one of those calls in flight (billing
//     counts an object's active time; one that can hibernate is not billed while idle);
//   - storage: rows read and written, as SQLite-backed objects are billed: a SQL cursor's own
//     counts, a key-value `get` a row per key asked, `list` a row per key returned, `put` and
//     `delete` a row written per key, `setAlarm` and `deleteAlarm` one row written.
// GET /__bench/meter on the Worker answers the counts so far and starts them again.

const counts = { objectRequests: 0, objectActiveMs: 0, rowsRead: 0, rowsWritten: 0 };
/** SQL cursors not yet counted: their rows are known once read, so they are summed late. */
let cursors = [];
/** Per object id: calls in flight, and since when it has had one. */
const active = new Map();

// Native methods must run on the object itself, not on its proxy; its constructor is left as it
// is (workers-rs tells a binding's type by its constructor's name).
const bound = (target, key) => {
  const value = Reflect.get(target, key);
  return typeof value === 'function' && key !== 'constructor' ? value.bind(target) : value;
};
const keys = (k) => (Array.isArray(k) ? k.length : 1);

function settleCursors() {
  for (const c of cursors) {
    counts.rowsRead += c.rowsRead ?? 0;
    counts.rowsWritten += c.rowsWritten ?? 0;
  }
  cursors = [];
}

function meteredSql(sql) {
  return new Proxy(sql, {
    get(target, key) {
      if (key === 'exec') {
        return (...args) => {
          const cursor = target.exec(...args);
          cursors.push(cursor);
          return cursor;
        };
      }
      return bound(target, key);
    },
  });
}

function meteredStorage(storage) {
  const rows = {
    get: async (k, ...rest) => ((counts.rowsRead += keys(k)), storage.get(k, ...rest)),
    list: async (...args) => {
      const found = await storage.list(...args);
      counts.rowsRead += found.size;
      return found;
    },
    put: async (k, ...rest) => ((counts.rowsWritten += typeof k === 'string' ? 1 : Object.keys(k).length), storage.put(k, ...rest)),
    delete: async (k, ...rest) => ((counts.rowsWritten += keys(k)), storage.delete(k, ...rest)),
    setAlarm: async (...args) => ((counts.rowsWritten += 1), storage.setAlarm(...args)),
    deleteAlarm: async (...args) => ((counts.rowsWritten += 1), storage.deleteAlarm(...args)),
  };
  return new Proxy(storage, {
    get(target, key) {
      if (key in rows) return rows[key];
      if (key === 'sql') return meteredSql(target.sql);
      return bound(target, key);
    },
  });
}

function meteredState(state) {
  return new Proxy(state, {
    get(target, key) {
      if (key === 'storage') return meteredStorage(target.storage);
      return bound(target, key);
    },
  });
}

/** One billed request on the object `id`, and its share of the object's active time. */
function timed(id, call) {
  const now = performance.now();
  const a = active.get(id) ?? { inFlight: 0, since: 0 };
  if (a.inFlight++ === 0) a.since = now;
  active.set(id, a);
  counts.objectRequests++;
  const done = () => {
    if (--a.inFlight === 0) {
      counts.objectActiveMs += performance.now() - a.since;
      active.delete(id);
    }
    settleCursors();
  };
  try {
    const result = call();
    if (typeof result?.then === 'function') {
      // An RPC result is a thenable with properties of its own: handed back as it is.
      Reflect.apply(Reflect.get(result, 'then'), result, [done, done]);
      return result;
    }
    done();
    return result;
  } catch (e) {
    done();
    throw e;
  }
}

/** Every call on the stub counted: `fetch` and any RPC method. Called with `Reflect.apply`: on
 *  an RPC stub, `method.apply` would itself be a remote call. */
function meteredStub(stub) {
  const id = String(stub.id);
  return new Proxy(stub, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== 'function' || key === 'constructor' || typeof key === 'symbol') return value;
      return (...args) => timed(id, () => Reflect.apply(value, target, args));
    },
  });
}

function meteredNamespace(ns) {
  return new Proxy(ns, {
    get(target, key) {
      if (key === 'get' || key === 'getByName') return (...args) => meteredStub(Reflect.apply(Reflect.get(target, key), target, args));
      return bound(target, key);
    },
  });
}

function meteredEnv(env) {
  const out = {};
  for (const [k, v] of Object.entries(env)) out[k] = v && typeof v === 'object' && typeof v.idFromName === 'function' ? meteredNamespace(v) : v;
  return out;
}

/** The Worker's handlers, with its bindings metered, and the meter's own route. */
export function meteredWorker(inner) {
  const handlers = {};
  for (const key of Object.keys(inner)) {
    const h = inner[key];
    handlers[key] = typeof h === 'function' ? (first, env, ctx) => h.call(inner, first, meteredEnv(env), ctx) : h;
  }
  const fetch = handlers.fetch;
  handlers.fetch = (request, env, ctx) => {
    if (new URL(request.url).pathname === '/__bench/meter') {
      settleCursors();
      const now = performance.now();
      // Objects still busy count their time so far.
      const reply = { ...counts };
      for (const a of active.values()) {
        reply.objectActiveMs += now - a.since;
        a.since = now;
      }
      for (const k of Object.keys(counts)) counts[k] = 0;
      return Response.json(reply);
    }
    return fetch(request, env, ctx);
  };
  return handlers;
}

/** A Durable Object class whose objects see metered storage and bindings: a subclass, so the
 *  runtime still finds the `DurableObject` it extends (and its RPC methods). That base class takes
 *  only the runtime's own state object: its subclasses get the metered one as `ctx` after. */
export function meteredClass(cls) {
  return class extends cls {
    constructor(state, env) {
      const metered = meteredState(state);
      try {
        super(metered, meteredEnv(env));
      } catch {
        super(state, meteredEnv(env));
        Object.defineProperty(this, 'ctx', { value: metered, configurable: true, writable: true });
      }
    }
  };
}
