// Code mode's sandbox: a model's program made safe to run in a Dynamic Worker (the Worker Loader
// binding). `prepare` parses the program with acorn, refuses what it must not name, splices a step
// guard into every loop body and function body (text spliced at node positions, never code
// regenerated, so lines stay where the model wrote them) and returns the Worker's modules: a runner
// that charges bulk allocations against a memory budget, captures the console, calls tools through
// the one RPC stub it is given, and bounds the result. tests/e2e/codemode_sandbox.test.mjs runs it
// in workerd through Miniflare.
//
// Why guards at all: workerd runs Dynamic Workers on its own thread locally and enforces neither
// CPU nor memory limits there, so `while (true) {}` would hang the whole process and an allocation
// loop would abort it. On Cloudflare the isolate's 128 MB and the Worker's `cpuMs` are the
// backstop; the guards make the common runaway programs end with an error the model can act on,
// everywhere.
//
// Steps: one per loop iteration and function call of the program's own code, 64 per caught
// exception, one per 8 elements or characters a built-in walks (arrays, strings, typed arrays) and
// one per character of JSON parsed or written, so a loop of `indexOf` over a big array ends too.
// Memory: bytes charged by the bulk allocators (the Array, ArrayBuffer, typed array, Map and Set
// constructors, and the methods that copy or grow: Array.from, concat, fill, join, push, splice,
// slice, map, filter, flat, repeat, padStart/padEnd, split, match, the case and replace methods,
// Object.keys/values/entries/assign, JSON.stringify, TextEncoder/TextDecoder, atob/btoa,
// String.fromCharCode, Promise.all and its kin, Object.fromEntries and groupBy, iterator helpers'
// toArray), and by spread and array and object literals, which the
// instrumentation wraps. The web
// platform's bodies, blobs, streams (and so DecompressionStream), HTMLRewriter, message channels
// and the cache are removed from the global scope; WebAssembly, SharedArrayBuffer, Atomics and
// structuredClone too.
//
// What the budgets do not cover, honestly:
// - CPU inside one built-in beyond its length: a catastrophic regular expression
//   (`/(a+)+$/.test('a'.repeat(30) + 'b')`), RegExp.prototype.exec called directly on a long
//   string in a loop, and flattening a rope string built by concatenation. Only `cpuMs` ends these.
// - Memory that no wrapped allocator makes: empty literals, closures, class instances, an array
//   grown by index (`a[i] = x`), string concatenation (ropes up to V8's longest string, 2**29
//   characters, cheap until flattened), Map and Set growth through set/add, Intl's formatters. Each costs a step, so the steps budget bounds them (about
//   50 to 100 bytes a step: with 10 million steps, under a gigabyte, which workerd's 1.4 GB heap
//   survives), except concatenation, which doubles a string in one step; the string methods that
//   flatten a rope into a new string charge what they return, but a rope flattened by indexing
//   or comparing is not charged.
// - The budget is of bytes allocated, not bytes alive: nothing is given back when garbage is
//   collected, so a program that builds and drops many large arrays runs out too.
// - The Dynamic Worker must run without `nodejs_compat`: its Buffer and process would be
//   allocators and globals nothing here wraps.
// - A promise that never settles holds the call until the caller's wall-time limit (workerd ends
//   it at once when nothing else is pending: "code had hung").

import { parse } from 'acorn';

/** Identifiers starting with this are refused in a program: the guard's name starts with it. */
const RESERVED = '__sandbox_';

/** The WorkerCode's module names. `program.js` is what error frames name. */
const RUNNER = 'runner.js';
const GUARD = 'guard.js';
const PROGRAM = 'program.js';

/** The program's first line as parsed and as run: code line k is line k + 1 of both. */
const OPEN = '(async function (tools, console) {\n';
const CLOSE = '\n})';

const LOOPS = new Set(['ForStatement', 'ForInStatement', 'ForOfStatement', 'WhileStatement', 'DoWhileStatement']);
const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

/**
 * The Dynamic Worker's code for one program, or why the program cannot run.
 * code: the body of an async function that receives `tools` (and `console`) and returns a JSON value.
 * limits: { steps, memoryBytes, logLines, logBytes, resultBytes, toolCalls? } (toolCalls: at most
 *   that many calls through `tools`, when given)
 * Returns { mainModule, modules } (a WorkerCode's fields), or { error: { message, line, column } }
 * for a program that cannot run (line and column in the code as sent, 1-based).
 */
export function prepare(code, limits) {
  const text = OPEN + code + CLOSE;
  const lines = lineStarts(text);
  let ast;
  try {
    ast = parse(text, { ecmaVersion: 'latest', sourceType: 'module' });
  } catch (e) {
    const at = typeof e.pos === 'number' ? e.pos : 0;
    return refusal('SyntaxError: ' + String(e.message).replace(/ \(\d+:\d+\)$/, ''), at, lines, code);
  }
  // The program must be the one function expression it was wrapped in: code such as
  // `}); f(); (function () {` parses, but as three statements.
  const only = ast.body.length === 1 && ast.body[0].type === 'ExpressionStatement' ? ast.body[0].expression : undefined;
  if (!only || only.type !== 'FunctionExpression' || only.start !== 1 || only.end !== text.length - 1) {
    return refusal('the code is not the body of one function', OPEN.length, lines, code);
  }

  const guard = RESERVED + randomHex();
  const call = guard + '();';
  const inserts = [];
  let seq = 0;
  // Openings at one position go outermost first, closings innermost first.
  const open = (pos, s) => inserts.push({ pos, s, key: seq++, close: false });
  const close = (pos, s) => inserts.push({ pos, s, key: -seq++, close: true });
  const wrapBody = (body) => {
    if (body.type === 'BlockStatement') open(body.start + 1, call);
    else {
      open(body.start, '{' + call);
      close(body.end, '}');
    }
  };

  const stack = [ast];
  while (stack.length) {
    const node = stack.pop();
    const type = node.type;
    if ((type === 'Identifier' || type === 'PrivateIdentifier') && node.name.startsWith(RESERVED)) {
      return refusal(`names starting with ${RESERVED} are reserved`, node.start, lines, code);
    }
    if (type === 'ImportExpression' || (type === 'MetaProperty' && node.meta.name === 'import')) {
      return refusal('a program cannot import modules', node.start, lines, code);
    }
    // Spread copies what it spreads: charged by the guard module's `spread` (an iterable, made an
    // array first so its length is known) and `props` (an object's own keys).
    const spreads = type === 'ArrayExpression' ? node.elements : type === 'CallExpression' || type === 'NewExpression' ? node.arguments : undefined;
    if (spreads) {
      for (const e of spreads) {
        if (e && e.type === 'SpreadElement') {
          open(e.argument.start, guard + '_s(');
          close(e.argument.end, ')');
        }
      }
    } else if (type === 'ObjectExpression') {
      for (const e of node.properties) {
        if (e.type === 'SpreadElement') {
          open(e.argument.start, guard + '_p(');
          close(e.argument.end, ')');
        }
      }
    } else if ((type === 'VariableDeclarator' && node.init) || (type === 'AssignmentExpression' && node.operator === '=')) {
      // `const [a, ...rest] = x` copies x's rest alike.
      const pattern = type === 'VariableDeclarator' ? node.id : node.left;
      const source = type === 'VariableDeclarator' ? node.init : node.right;
      if (pattern.type === 'ArrayPattern' && pattern.elements.some((e) => e && e.type === 'RestElement')) {
        open(source.start, guard + '_s(');
        close(source.end, ')');
      }
    }
    // An array or object literal evaluated in a loop allocates each time: charged by its size
    // (V8: a header of about 32 bytes, 8 a slot), so that `for (;;) keep.push([0, 0, 0, ...])`
    // spends the memory budget rather than the process's heap. Empty ones are left to the steps.
    const size = type === 'ArrayExpression' ? node.elements.length : type === 'ObjectExpression' ? node.properties.length : 0;
    if (size > 0) {
      open(node.start, `(${guard}_m(${32 + 8 * size}), `);
      close(node.end, ')');
    }
    // A caught exception costs microseconds (a stack overflow's, caught at each of 10,000 frames and
    // recursed into again, far more than a loop iteration): each catch counts as 64 steps.
    if (type === 'CatchClause') open(node.body.start + 1, guard + '_c();');
    if (LOOPS.has(type)) wrapBody(node.body);
    else if (FUNCTIONS.has(type)) {
      if (node.body.type === 'BlockStatement') open(node.body.start + 1, call);
      else {
        open(node.body.start, '(' + guard + '(), (');
        close(node.body.end, '))');
      }
    }
    // Children pushed in reverse so they pop in source order (pre-order: outer before inner).
    const children = [];
    for (const key in node) {
      const v = node[key];
      if (Array.isArray(v)) {
        for (const c of v) if (c && typeof c.type === 'string') children.push(c);
      } else if (v && typeof v.type === 'string' && key !== 'loc') children.push(v);
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }

  inserts.sort((a, b) => a.pos - b.pos || (a.close === b.close ? a.key - b.key : a.close ? -1 : 1));
  let out = '';
  let last = 0;
  // Per code line, [column, length] of each insertion, in order: what maps a frame's column back.
  const columns = {};
  for (const ins of inserts) {
    out += text.slice(last, ins.pos) + ins.s;
    last = ins.pos;
    const { line, column } = position(ins.pos, lines);
    if (line >= 2) (columns[line - 1] ??= []).push([column, ins.s.length]);
  }
  out += text.slice(last);

  const names = `step as ${guard}, caught as ${guard}_c, charge as ${guard}_m, spread as ${guard}_s, props as ${guard}_p`;
  const program = `import { ${names} } from './${GUARD}'; export default ${out};\n`;
  return {
    mainModule: RUNNER,
    modules: {
      [RUNNER]: runnerSource(limits, columns),
      [GUARD]: guardSource(limits),
      [PROGRAM]: program,
    },
  };
}

function randomHex() {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** Where each line starts, counting line breaks as acorn and V8 do: \r\n, \n, \r, \u2028, \u2029. */
const BREAK = /\r\n?|[\n\u2028\u2029]/g;
function lineStarts(text) {
  const starts = [0];
  for (const m of text.matchAll(BREAK)) starts.push(m.index + m[0].length);
  return starts;
}

/** 1-based line, 0-based column of an offset. */
function position(pos, starts) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: pos - starts[lo] };
}

/** A refusal at an offset of the wrapped text, placed in the code's own lines. */
function refusal(message, pos, starts, code) {
  const { line, column } = position(pos, starts);
  const codeLines = code.split(BREAK);
  if (line < 2) return { error: { message, line: 1, column: 1 } };
  if (line - 1 > codeLines.length) {
    // The wrapper's closing line: the code ended early (an unclosed brace, say).
    return { error: { message, line: codeLines.length, column: codeLines[codeLines.length - 1].length + 1 } };
  }
  return { error: { message, line: line - 1, column: column + 1 } };
}

const int = (n, name) => {
  if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`limits.${name} must be a non-negative integer`);
  return n;
};

/** The step guard and the memory budget, in a module of their own: the program imports only `step`. */
function guardSource(limits) {
  const steps = int(limits.steps, 'steps');
  const memory = int(limits.memoryBytes, 'memoryBytes');
  return `const RangeErr = RangeError;
const arrayFrom = Array.from;
const isArray = Array.isArray;
const keys = Object.keys;
const ITERATOR = Symbol.iterator;
const STEPS = ${steps};
const MEMORY = ${memory};
let steps = 0;
let bytes = 0;
let spent = '';
let where = '';
function spend(message) {
  if (spent !== '') return;
  spent = message;
  // The stack as it is now, before the program can change how stacks are written.
  const e = new RangeErr(message);
  const s = e.stack;
  where = typeof s === 'string' ? s : '';
}
export function step() {
  if (++steps > STEPS) spend('the program ran more than ' + STEPS + ' steps (loop iterations and function calls)');
  if (spent !== '') throw new RangeErr(spent);
}
export function caught() {
  steps += 64;
  if (steps > STEPS) spend('the program ran more than ' + STEPS + ' steps (loop iterations and function calls)');
  if (spent !== '') throw new RangeErr(spent);
}
export function charge(n) {
  if (n > 0) {
    bytes += n;
    if (bytes > MEMORY) spend('the program allocated more than ' + MEMORY + ' bytes (arrays, strings and buffers)');
  }
  if (spent !== '') throw new RangeErr(spent);
}
// What a spread copies: an array's or a string's length; any other iterable made an array first
// (as the spread itself would iterate it, at the same point), so its length is known.
export function spread(x) {
  if (typeof x === 'string' || isArray(x)) {
    charge(x.length * 8);
    work(x.length);
    return x;
  }
  if (x === null || typeof x !== 'object' || typeof x[ITERATOR] !== 'function') return x;
  const a = arrayFrom(x);
  charge(a.length * 8);
  work(a.length);
  return a;
}
export function props(x) {
  if (x !== null && typeof x === 'object') charge(keys(x).length * 16);
  else if (typeof x === 'string') charge(x.length * 16);
  return x;
}
// A built-in's work on n elements or characters, as steps: one per 8. Measured in workerd, a loop
// iteration of the program's own costs 2 to 6 ns, a built-in's element or character 0.3 (indexOf)
// to 10 ns (JSON.parse).
export function work(n) {
  if (n > 64) {
    steps += n / 8;
    if (steps > STEPS) spend('the program ran more than ' + STEPS + ' steps (loop iterations and function calls)');
  }
  if (spent !== '') throw new RangeErr(spent);
}
export function failure() { return spent; }
export function failureStack() { return where; }
`;
}

/** The main module: the allocators wrapped, then `run`. */
function runnerSource(limits, columns) {
  const settings = {
    logLines: int(limits.logLines, 'logLines'),
    logBytes: int(limits.logBytes, 'logBytes'),
    resultBytes: int(limits.resultBytes, 'resultBytes'),
    toolCalls: limits.toolCalls === undefined ? -1 : int(limits.toolCalls, 'toolCalls'),
  };
  return `import { charge, failure, failureStack, step, work } from './${GUARD}';
import program from './${PROGRAM}';
const LIMITS = ${JSON.stringify(settings)};
const COLUMNS = ${JSON.stringify(columns)};
${RUNNER_BODY}`;
}

// Everything below runs in the Dynamic Worker. What it uses after the program has started is taken
// at module evaluation, before the program runs: the program may replace any global, prototype
// method or accessor, and nothing the runner reports may depend on them. Objects the runner hands to
// built-ins (descriptors, proxy handlers, the result) have no prototype, so a property the program
// adds to Object.prototype (\`then\`, \`get\`) is never read from them.
const RUNNER_BODY = String.raw`
const G = globalThis;
const { apply, construct, defineProperty, getOwnPropertyDescriptor, getPrototypeOf, ownKeys } = Reflect;
const reflectGet = Reflect.get;
const SPECIES = Symbol.species;
const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype);
const log2 = Math.log2;
const ObjectKeys = Object.keys;
const hasOwn = Object.hasOwn;
const RangeErr = RangeError;
const isArray = Array.isArray;
const stringify = JSON.stringify;
const parseJson = JSON.parse;
const StringCtor = String;
const ErrorCtor = Error;
const TypeErr = TypeError;
const ProxyCtor = Proxy;
const regexExec = RegExp.prototype.exec;
const strSlice = String.prototype.slice;
const encoder = new TextEncoder();
const encode = TextEncoder.prototype.encode;
const typedByteLength = getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype), 'byteLength').get;
const bufferByteLength = getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const toolOf = new WeakMap();
const weakGet = WeakMap.prototype.get;
const weakSet = WeakMap.prototype.set;
const WORD = 8;
const CHAR = 2;
const LINE = 2000;

const utf8 = (s) => apply(typedByteLength, apply(encode, encoder, [s]), []);
const data = (value) => ({ __proto__: null, value, writable: true, enumerable: false, configurable: true });
/** Sets an own enumerable property without assignment (which would meet a setter the program put
 *  on Object.prototype). */
const own = (o, key, value) => defineProperty(o, key, { __proto__: null, value, writable: true, enumerable: true, configurable: true });
/** An object RPC can send (one without a prototype cannot be), with an own, hidden 'then': a
 *  'then' the program put on Object.prototype would otherwise take over resolving the result. */
const plain = (fields) => {
  const o = {};
  defineProperty(o, 'then', data(undefined));
  for (const key in fields) if (fields[key] !== undefined) own(o, key, fields[key]);
  return o;
};
const cut = (s, n) => (s.length > n ? apply(strSlice, s, [0, n]) + '…' : s);

// ---- The memory budget: bulk allocators charge before they allocate (or, where the size is only
// known after, right after). A program that reaches the limit gets a RangeError, and so does every
// later charge and step.

/** How many elements a source of Array.from or a typed array constructor has, when cheap to know. */
function lengthOf(v) {
  if (typeof v === 'string') return v.length;
  if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return 0;
  const n = v.length;
  return typeof n === 'number' && n > 0 ? n : 0;
}
/** The number of elements between two relative indices (fill, with its defaults). */
function span(len, start, end) {
  const rel = (x, d) => {
    if (x === undefined) return d;
    let n = +x;
    if (n !== n) n = 0;
    if (n < 0) n = len + n < 0 ? 0 : len + n;
    return n > len ? len : n;
  };
  const s = rel(start, 0);
  const e = rel(end, len);
  return e > s ? e - s : 0;
}
function wrap(owner, name, make) {
  const original = owner[name];
  if (typeof original !== 'function') return;
  defineProperty(owner, name, data(make(original)));
}
/** A constructor behind a proxy that charges first; its prototype's constructor is the proxy too,
 *  so [].constructor reaches no allocator uncharged. Its Symbol.species reads as undefined, so the
 *  methods that would construct through it (slice, map, filter, splice) make a plain one, which
 *  they charge themselves: species can be turned off anyway (an own constructor: undefined). */
function guardConstructor(name, cost, after) {
  const C = G[name];
  if (typeof C !== 'function') return;
  let P;
  const handler = {
    __proto__: null,
    get(target, key, receiver) {
      return key === SPECIES ? undefined : reflectGet(target, key, receiver);
    },
    apply(target, self, args) {
      const n = cost(args);
      charge(n);
      const out = apply(C, self, args);
      if (after) after(out, n, args);
      return out;
    },
    construct(target, args, newTarget) {
      const n = cost(args);
      charge(n);
      const out = construct(C, args, newTarget === P ? C : newTarget);
      if (after) after(out, n, args);
      return out;
    },
  };
  P = new ProxyCtor(C, handler);
  defineProperty(C.prototype, 'constructor', data(P));
  defineProperty(G, name, data(P));
  return P;
}

const ArrayCtor = Array;
const ArrayProxy = guardConstructor('Array', (args) => (args.length === 1 && typeof args[0] === 'number' ? args[0] : args.length) * WORD);
const arrayFromOriginal = ArrayCtor.from;
wrap(ArrayCtor, 'from', (from) => function from_(items) {
  const n = lengthOf(items);
  charge(n * WORD);
  const out = apply(from, this === ArrayProxy ? ArrayCtor : this, arguments);
  const m = lengthOf(out);
  if (m > n) charge((m - n) * WORD);
  work(m);
  return out;
});
const AP = ArrayCtor.prototype;
wrap(AP, 'concat', (concat) => function concat_() {
  let n = lengthOf(this);
  for (let i = 0; i < arguments.length; i++) {
    const a = arguments[i];
    n += isArray(a) ? a.length : 1;
  }
  charge(n * WORD);
  return apply(concat, this, arguments);
});
wrap(AP, 'fill', (fill) => function fill_(value, start, end) {
  charge(span(lengthOf(this), start, end) * WORD);
  return apply(fill, this, arguments);
});
wrap(AP, 'join', (join) => function join_(separator) {
  const len = lengthOf(this);
  const sep = separator === undefined ? 1 : typeof separator === 'string' ? separator.length : 1;
  let n = len > 1 ? (len - 1) * sep : 0;
  // The elements' own lengths when the array is small enough to look at first.
  if (isArray(this) && len <= 100000) {
    for (let i = 0; i < len; i++) {
      const e = this[i];
      if (typeof e === 'string') n += e.length;
    }
  }
  charge(n * CHAR);
  const out = apply(join, this, arguments);
  if (out.length > n) charge((out.length - n) * CHAR);
  return out;
});
for (const name of ['toReversed', 'toSorted', 'toSpliced', 'with']) {
  wrap(AP, name, (f) => function () {
    charge(lengthOf(this) * WORD);
    return apply(f, this, arguments);
  });
}
// Growing an array in place: what is added is charged (push in a loop, and push.apply(a, big)).
for (const name of ['push', 'unshift']) {
  wrap(AP, name, (f) => function () {
    charge(arguments.length * WORD);
    return apply(f, this, arguments);
  });
}
wrap(AP, 'splice', (splice) => function splice_() {
  if (arguments.length > 2) charge((arguments.length - 2) * WORD);
  return apply(splice, this, arguments);
});
// The methods that make a new array of what they produce: charged after, by its length.
for (const name of ['slice', 'map', 'filter', 'flat', 'flatMap', 'splice']) {
  wrap(AP, name, (f) => function () {
    const out = apply(f, this, arguments);
    charge(lengthOf(out) * WORD);
    return out;
  });
}

const SP = String.prototype;
wrap(SP, 'repeat', (repeat) => function repeat_(count) {
  const n = +count;
  charge(lengthOf(this) * (n > 0 ? n : 0) * CHAR);
  return apply(repeat, this, arguments);
});
for (const name of ['padStart', 'padEnd']) {
  wrap(SP, name, (pad) => function (maxLength) {
    const n = +maxLength;
    charge((n > 0 ? n : 0) * CHAR);
    return apply(pad, this, arguments);
  });
}
// These make a new string as long as (or longer than) the one they are given: charged after, by
// what they made. A rope doubled by concatenation is flattened here, so its size is charged once
// it is first used this way.
for (const name of ['toUpperCase', 'toLowerCase', 'toLocaleUpperCase', 'toLocaleLowerCase', 'normalize', 'replace', 'replaceAll', 'concat', 'toWellFormed', 'trim', 'trimStart', 'trimEnd']) {
  wrap(SP, name, (f) => function () {
    const out = apply(f, this, arguments);
    if (typeof out === 'string') charge(out.length * CHAR);
    return out;
  });
}
for (const name of ['split', 'match']) {
  wrap(SP, name, (f) => function () {
    const out = apply(f, this, arguments);
    charge(lengthOf(out) * WORD + lengthOf(this) * CHAR);
    return out;
  });
}
wrap(Object, 'assign', (assign) => function assign_(target) {
  for (let i = 1; i < arguments.length; i++) {
    const source = arguments[i];
    charge(source !== null && typeof source === 'object' ? ObjectKeys(source).length * 2 * WORD : 0);
  }
  return apply(assign, this, arguments);
});
wrap(Reflect, 'ownKeys', (f) => function ownKeys() {
  const out = apply(f, this, arguments);
  charge(lengthOf(out) * WORD);
  return out;
});
// A Set or Map made from an iterable: charged by what it holds, its length known only after.
for (const name of ['Set', 'Map']) {
  const size = getOwnPropertyDescriptor(G[name].prototype, 'size').get;
  guardConstructor(
    name,
    (args) => {
      const a = args[0];
      return (a !== null && typeof a === 'object' ? lengthOf(a) : 0) * 4 * WORD;
    },
    (out, n) => {
      const m = apply(size, out, []);
      if (m * 4 * WORD > n) charge(m * 4 * WORD - n);
      work(m);
    },
  );
}
// Promise combinators make a promise and two functions an element: an iterable that is not an
// array is made one first (by the charged Array.from), so its length is known.
for (const name of ['all', 'allSettled', 'any', 'race']) {
  wrap(Promise, name, (f) => function (items) {
    const list = isArray(items) || items === null || typeof items !== 'object' ? items : copy(items);
    const n = lengthOf(list);
    charge(n * 16 * WORD);
    work(n * 8);
    return apply(f, this, [list]);
  });
}
for (const [owner, name] of [[Object, 'fromEntries'], [Object, 'groupBy'], [G.Map, 'groupBy']]) {
  wrap(owner, name, (f) => function (items) {
    const list = isArray(items) || items === null || typeof items !== 'object' ? items : copy(items);
    const n = lengthOf(list);
    charge(n * 4 * WORD);
    work(n * 8);
    const args = [list];
    for (let i = 1; i < arguments.length; i++) args[i] = arguments[i];
    return apply(f, this, args);
  });
}
// Iterator helpers: a callback, even a built-in one, counts a step a call; toArray is charged.
const IteratorPrototype = G.Iterator ? G.Iterator.prototype : getPrototypeOf(getPrototypeOf([][Symbol.iterator]()));
for (const name of ['map', 'filter', 'flatMap', 'forEach', 'some', 'every', 'find', 'reduce']) {
  wrap(IteratorPrototype, name, (f) => function (fn) {
    const args = [];
    for (let i = 0; i < arguments.length; i++) args[i] = arguments[i];
    if (typeof fn === 'function') {
      args[0] = function () {
        step();
        return apply(fn, this, arguments);
      };
    }
    return apply(f, this, args);
  });
}
wrap(IteratorPrototype, 'toArray', (f) => function toArray() {
  const out = apply(f, this, arguments);
  charge(lengthOf(out) * WORD);
  work(lengthOf(out));
  return out;
});
wrap(JSON, 'stringify', (f) => function stringify_() {
  const out = apply(f, this, arguments);
  if (typeof out === 'string') charge(out.length * CHAR);
  return out;
});
for (const name of ['keys', 'values', 'entries', 'getOwnPropertyNames']) {
  wrap(Object, name, (f) => function () {
    const out = apply(f, this, arguments);
    charge(lengthOf(out) * WORD * (name === 'entries' ? 4 : 1));
    work(lengthOf(out));
    return out;
  });
}

const isBuffer = (v) => {
  try {
    apply(bufferByteLength, v, []);
    return true;
  } catch {
    return false;
  }
};
guardConstructor('ArrayBuffer', (args) => {
  const n = +args[0];
  const options = args[1];
  const max = options !== null && typeof options === 'object' ? +options.maxByteLength : 0;
  return n > max ? n : max;
});
wrap(ArrayBuffer.prototype, 'transfer', (f) => function transfer(newLength) {
  charge(newLength === undefined ? 0 : +newLength);
  return apply(f, this, arguments);
});
wrap(ArrayBuffer.prototype, 'slice', (f) => function slice() {
  const out = apply(f, this, arguments);
  charge(apply(bufferByteLength, out, []));
  return out;
});
for (const name of ['slice', 'map', 'filter', 'toReversed', 'toSorted', 'with']) {
  wrap(TypedArrayPrototype, name, (f) => function () {
    const out = apply(f, this, arguments);
    charge(apply(typedByteLength, out, []));
    return out;
  });
}
for (const name of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
  const C = G[name];
  if (typeof C !== 'function') continue;
  const size = C.BYTES_PER_ELEMENT;
  guardConstructor(
    name,
    (args) => {
      const a = args[0];
      if (typeof a === 'number') return a * size;
      if (a === null || typeof a !== 'object' || isBuffer(a)) return 0;
      return lengthOf(a) * size;
    },
    (out, n, args) => {
      const m = apply(typedByteLength, out, []);
      if (m > n && !isBuffer(args[0])) charge(m - n);
    },
  );
}
// ---- Built-ins' work counted as steps: a call that walks an array, a string or a typed array costs
// steps by its length, so \`for (;;) big.indexOf(x)\` ends like any loop, and a huge length (a
// sparse array's, or an array-like's) ends before the walk starts. Called on something that is not
// an array, a generic array method works on a copy made by the charged Array.from (which reads the
// length once: a getter cannot show the meter one length and the method another); a method that
// changes its array refuses such a receiver.
const copy = (v) => apply(arrayFromOriginal, ArrayProxy, [v]);
const MUTATORS = ['copyWithin', 'fill', 'pop', 'push', 'reverse', 'shift', 'sort', 'splice', 'unshift'];
const FREE = ['constructor', 'at', 'push', 'pop', 'keys', 'values', 'entries', 'toString', 'toLocaleString', 'charAt', 'charCodeAt', 'codePointAt', 'valueOf', 'slice', 'substring', 'substr', 'subarray', 'isWellFormed'];
function meter(proto, receiver, lengthOfThis) {
  const keys = ownKeys(proto);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (typeof key !== 'string' || apply(arrayIncludes, FREE, [key])) continue;
    const d = getOwnPropertyDescriptor(proto, key);
    if (d === undefined || typeof d.value !== 'function') continue;
    const sorts = key === 'sort' || key === 'toSorted';
    const mutates = apply(arrayIncludes, MUTATORS, [key]);
    wrap(proto, key, (f) => function () {
      const self = receiver(this, mutates);
      const n = lengthOfThis(self);
      work(sorts && n > 1 ? n * log2(n) : n);
      return apply(f, self, arguments);
    });
  }
}
const arrayIncludes = AP.includes;
meter(AP, (self, mutates) => {
  if (isArray(self) || self === null || self === undefined) return self;
  if (mutates) throw new TypeErr('a program may change only arrays with this method');
  return copy(self);
}, lengthOf);
meter(SP, (self) => (typeof self === 'string' || self === null || self === undefined ? self : StringCtor(self)), lengthOf);
const typedLength = getOwnPropertyDescriptor(TypedArrayPrototype, 'length').get;
meter(TypedArrayPrototype, (self) => self, (self) => {
  try {
    return apply(typedLength, self, []);
  } catch {
    return 0;
  }
});
for (const name of ['parse', 'stringify']) {
  wrap(JSON, name, (f) => function () {
    const out = apply(f, this, arguments);
    // JSON costs about 7 ns a character: a step each (work counts 8 to a step).
    work((name === 'parse' ? lengthOf(arguments[0]) : lengthOf(out)) * 8);
    return out;
  });
}

// Text and bytes made from what the program holds: charged by what they make.
wrap(TextDecoder.prototype, 'decode', (f) => function decode() {
  const out = apply(f, this, arguments);
  charge(lengthOf(out) * CHAR);
  return out;
});
wrap(TextEncoder.prototype, 'encode', (f) => function encode_() {
  const out = apply(f, this, arguments);
  charge(apply(typedByteLength, out, []));
  return out;
});
for (const owner of [G, StringCtor]) {
  for (const name of owner === G ? ['atob', 'btoa'] : ['fromCharCode', 'fromCodePoint', 'raw']) {
    wrap(owner, name, (f) => function () {
      const out = apply(f, this, arguments);
      charge(lengthOf(out) * CHAR);
      return out;
    });
  }
}
// No use to a program, and each a way around the budget or the thread: WebAssembly's memories,
// shared buffers and Atomics.wait; structuredClone (a deep copy no charge could size before it is
// made: JSON.parse(JSON.stringify(x)) is charged); bodies, blobs and streams (DecompressionStream turns a few bytes
// into a gigabyte no allocator wrapped here sees); HTML rewriting; message channels; the cache.
// workerd's own classes sit on the global object's prototype, V8's on the global object.
// fetch and WebSocket stay: with globalOutbound null the platform refuses them itself.
const REMOVED = /^(WebAssembly|SharedArrayBuffer|Atomics|structuredClone|Request|Response|Blob|File|FormData|HTMLRewriter|WebSocketPair|EventSource|MessageChannel|MessagePort|caches)$|Stream/;
for (let o = G; o !== null && o !== Object.prototype; o = getPrototypeOf(o)) {
  const keys = ownKeys(o);
  for (let i = 0; i < keys.length; i++) {
    if (typeof keys[i] === 'string' && REMOVED.test(keys[i])) delete o[keys[i]];
  }
}

// ---- Errors: a frame in program.js mapped back to the code's own line and column.

const FRAME = /program\.js:(\d+):(\d+)/;
function locate(stack) {
  if (typeof stack !== 'string') return undefined;
  const m = apply(regexExec, FRAME, [stack]);
  if (m === null) return undefined;
  const line = +m[1] - 1;
  let col = +m[2] - 1;
  if (line < 1) return undefined;
  // Own entries only: the program may have put numbered properties on Object.prototype.
  if (hasOwn(COLUMNS, line)) {
    const inserted = COLUMNS[line];
    let shift = 0;
    for (let i = 0; i < inserted.length; i++) {
      const at = inserted[i][0] + shift;
      const len = inserted[i][1];
      if (col >= at + len) shift += len;
      else {
        if (col >= at) col = at;
        break;
      }
    }
    col -= shift;
  }
  return { __proto__: null, line, column: col + 1 };
}
function text(v) {
  try {
    return typeof v === 'string' ? v : StringCtor(v);
  } catch {
    return 'a value that cannot be shown';
  }
}
function describe(e) {
  let message;
  let stack;
  let tool;
  try {
    if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
      tool = apply(weakGet, toolOf, [e]);
      const m = e.message;
      const name = e.name;
      message = typeof m === 'string' ? (typeof name === 'string' && name !== 'Error' && tool === undefined ? name + ': ' + m : m) : text(e);
      stack = e.stack;
    } else message = text(e);
  } catch {
    message = 'the program threw a value that cannot be shown';
  }
  const at = locate(stack);
  const error = plain({ __proto__: null, message: cut(message, LINE), line: at?.line, column: at?.column, tool });
  return error;
}

// ---- The console: lines bounded, at most logLines lines and logBytes bytes; the rest counted.

const STOP = { __proto__: null };
function show(v) {
  if (typeof v === 'string') return cut(v, LINE);
  let out = '';
  const put = (s) => {
    out += s;
    if (out.length > LINE) throw STOP;
  };
  const walk = (v, depth) => {
    switch (typeof v) {
      case 'string':
        put(depth === 0 ? v : stringify(cut(v, LINE)));
        return;
      case 'bigint':
        put(StringCtor(v) + 'n');
        return;
      case 'number':
      case 'boolean':
      case 'undefined':
      case 'symbol':
        put(StringCtor(v));
        return;
      case 'function':
        put('[Function]');
        return;
    }
    if (v === null) return put('null');
    if (typeof v.toJSON === 'function') {
      const json = v.toJSON();
      if (json !== v) return walk(json, depth);
    }
    if (typeof v.message === 'string' && typeof v.name === 'string') return put(v.name + ': ' + v.message);
    if (depth > 4) return put(isArray(v) ? '[…]' : '{…}');
    if (isArray(v)) {
      put('[');
      for (let i = 0; i < v.length; i++) {
        if (i) put(', ');
        walk(v[i], depth + 1);
      }
      return put(']');
    }
    const keys = ObjectKeys(v);
    put('{');
    for (let i = 0; i < keys.length; i++) {
      if (i) put(', ');
      put(stringify(keys[i]) + ': ');
      walk(v[keys[i]], depth + 1);
    }
    put('}');
  };
  try {
    walk(v, 0);
  } catch (e) {
    if (e !== STOP) return cut(out, LINE) + '[cannot be shown]';
  }
  return cut(out, LINE);
}

// ---- run: the program called with its tools and console; the result bounded.

function tooBig(n) {
  return 'the result is ' + n + ' bytes, more than the limit ' + LIMITS.resultBytes;
}

export default {
  async run({ tools: stub }) {
    const logs = [];
    let lines = 0;
    let bytes = 0;
    let dropped = 0;
    const record = (prefix, args) => {
      if (dropped > 0 || lines >= LIMITS.logLines) {
        dropped++;
        return;
      }
      let line = prefix;
      for (let i = 0; i < args.length && line.length <= LINE; i++) line += (i ? ' ' : '') + show(args[i]);
      line = cut(line, LINE);
      const n = utf8(line);
      if (bytes + n > LIMITS.logBytes) {
        dropped++;
        return;
      }
      defineProperty(logs, lines, { __proto__: null, value: line, writable: true, enumerable: true, configurable: true });
      lines++;
      bytes += n;
    };
    const console = {
      log: (...args) => record('', args),
      info: (...args) => record('', args),
      debug: (...args) => record('', args),
      dir: (...args) => record('', args),
      table: (...args) => record('', args),
      trace: (...args) => record('trace: ', args),
      warn: (...args) => record('warn: ', args),
      error: (...args) => record('error: ', args),
      assert: (ok, ...args) => {
        if (!ok) record('error: Assertion failed: ', args);
      },
    };

    const toolError = (name, why) => {
      const e = new ErrorCtor('tool ' + name + ': ' + why);
      defineProperty(e, 'tool', data(name));
      apply(weakSet, toolOf, [e, name]);
      return e;
    };
    let calls = 0;
    let ended = false;
    const callTool = async (name, args) => {
      // No call once a budget is spent: a program that caught the error goes no further. Nor once
      // the run has ended (a timer left behind), nor past the number of calls allowed.
      charge(0);
      if (ended) throw new ErrorCtor('tool ' + name + ': the program has ended');
      if (LIMITS.toolCalls >= 0 && ++calls > LIMITS.toolCalls) throw new RangeErr('the program made more than ' + LIMITS.toolCalls + ' tool calls');
      const argsText = stringify(args ?? {});
      if (typeof argsText !== 'string') throw new TypeErr('tool ' + name + ': the arguments are not JSON');
      let reply;
      try {
        reply = parseJson(await stub.call(name, argsText));
      } catch (e) {
        throw toolError(name, describe(e).message);
      }
      const failed = reply !== null && typeof reply === 'object' && hasOwn(reply, 'error');
      if (failed) {
        const why = reply.error;
        throw toolError(name, typeof why === 'string' ? why : stringify(why));
      }
      return reply !== null && typeof reply === 'object' && hasOwn(reply, 'ok') ? reply.ok : undefined;
    };
    const tools = new ProxyCtor({ __proto__: null }, {
      __proto__: null,
      get(target, name) {
        if (typeof name !== 'string' || name === 'then') return undefined;
        return (args) => callTool(name, args);
      },
    });

    let value;
    let error;
    let returned;
    let finished = false;
    try {
      returned = await program(tools, console);
      finished = true;
    } catch (e) {
      error = describe(e);
    }
    if (finished) {
      // JSON.stringify with a replacer that counts as it goes, so a value far past the limit (a
      // million references to one long string) stops before its text is built.
      let estimate = 0;
      const cap = LIMITS.resultBytes * 2 + 1024;
      const counted = (key, v) => {
        estimate += key.length + 4 + (typeof v === 'string' ? v.length : 0);
        if (estimate > cap) throw STOP;
        return v;
      };
      try {
        const json = stringify(returned, counted);
        if (typeof json === 'string') {
          const n = utf8(json);
          if (n > LIMITS.resultBytes) error = plain({ __proto__: null, message: tooBig(n) });
          else value = json;
        }
      } catch (e) {
        const why = e === STOP ? 'the result is over ' + cap + ' bytes, more than the limit ' + LIMITS.resultBytes : 'the result is not JSON: ' + describe(e).message;
        error = plain({ __proto__: null, message: why });
      }
    }
    // A budget spent is the outcome even when the program caught the error and went on.
    const spent = failure();
    if (spent !== '') {
      const at = locate(failureStack());
      error = plain({ __proto__: null, message: spent, line: at?.line, column: at?.column });
      value = undefined;
    }
    ended = true;
    return plain({ __proto__: null, value, logs, dropped, error });
  },
};
`;
