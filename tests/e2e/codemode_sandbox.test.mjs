// Code mode's sandbox (src/edge/code/sandbox.js) in workerd: a host Worker bundled with esbuild
// prepares each program, loads it as a Dynamic Worker through the Worker Loader binding and runs it
// with a `tools` RPC target (tests/e2e/codemode/sandbox_host.js). Runaway programs end with the
// budget's error while the same workerd keeps serving; escapes are refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { prepare } from '../../src/edge/code/sandbox.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LIMITS = { steps: 200000, memoryBytes: 32 << 20, logLines: 20, logBytes: 4000, resultBytes: 100000 };
const STEPS = `the program ran more than ${LIMITS.steps} steps (loop iterations and function calls)`;
const MEMORY = `the program allocated more than ${LIMITS.memoryBytes} bytes (arrays, strings and buffers)`;

let mf;
before(async () => {
  const bundle = await build({
    entryPoints: [join(root, 'tests', 'e2e', 'codemode', 'sandbox_host.js')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    write: false,
    external: ['cloudflare:workers'],
  });
  mf = new Miniflare({ modules: true, script: bundle.outputFiles[0].text, compatibilityDate: '2026-04-01', workerLoaders: { LOADER: {} } });
  await mf.ready;
});
after(() => mf?.dispose());

async function run(code, limits = LIMITS) {
  const response = await mf.dispatchFetch('http://host/', { method: 'POST', body: JSON.stringify({ code, limits }) });
  return response.json();
}
/** The same workerd still serves: a plain request, and a program that runs to its end. */
async function stillServing() {
  assert.equal(await (await mf.dispatchFetch('http://host/')).text(), 'pong');
  assert.deepEqual((await run('return 1 + 1')).outcome, { value: '2', logs: [], dropped: 0 });
}
const column = (code, needle) => {
  const at = code.indexOf(needle);
  const line = code.slice(0, at).split('\n').length;
  return { line, column: at - code.lastIndexOf('\n', at - 1) };
};

test('a program calls tools, logs, and returns JSON text', async () => {
  const code = [
    'const bugs = await tools.issues_list({ labels: ["bug"] });',
    'console.log("found", bugs.length, bugs[0]);',
    'console.warn("careful");',
    'console.error(new TypeError("odd"));',
    'const odd = await tools["odd-name"]();',
    'const echoed = await tools.echo();',
    'return { numbers: bugs.map((i) => i.number), odd, echoed, none: undefined };',
  ].join('\n');
  const { outcome, calls } = await run(code);
  assert.deepEqual(outcome, {
    value: '{"numbers":[7,3],"odd":"odd","echoed":{}}',
    logs: ['found 2 {"number": 7, "title": "crash", "labels": ["bug"]}', 'warn: careful', 'error: TypeError: odd'],
    dropped: 0,
  });
  assert.deepEqual(calls, [['issues_list', '{"labels":["bug"]}'], ['odd-name', '{}'], ['echo', '{}']]);
  // Nothing returned is no value; `await tools` is not a tool call.
  assert.deepEqual((await run('await tools; console.log(typeof tools.then)')).outcome, { logs: ['undefined'], dropped: 0 });
});

test('a syntax error is placed in the code as sent', async () => {
  assert.deepEqual((await run('const a = 1;\nconst b = ;\nreturn a')).prepared, { message: 'SyntaxError: Unexpected token', line: 2, column: 11 });
  // An unclosed block ends at the code's end.
  assert.deepEqual((await run('if (x) {\n  y();')).prepared, { message: 'SyntaxError: Unexpected token', line: 2, column: 7 });
  // Code that closes the function it is the body of, to run at the module's top level.
  assert.deepEqual((await run('}); globalThis.x = 1; (function () {')).prepared, { message: 'the code is not the body of one function', line: 1, column: 1 });
  assert.deepEqual(prepare('return 1', LIMITS).mainModule, 'runner.js');
  assert.deepEqual(Object.keys(prepare('return 1', LIMITS).modules).sort(), ['guard.js', 'program.js', 'runner.js']);
});

test('a thrown error names its line and column, guards spliced into the line or not', async () => {
  const plain = 'const y = 2;\n    throw new Error("x")';
  assert.deepEqual((await run(plain)).outcome, { logs: [], dropped: 0, error: { message: 'x', ...column(plain, 'new Error') } });
  // Guards inserted before the throw on its own line shift nothing the model sees.
  const spliced = 'let n = 0;\nfor (const x of [1, 2]) { n += [x].map((v) => v * 2)[0]; if (n > 4) throw new RangeError("too far: " + n) }';
  assert.deepEqual((await run(spliced)).outcome, { logs: [], dropped: 0, error: { message: 'RangeError: too far: 6', ...column(spliced, 'new RangeError') } });
  // A value that is not an Error.
  assert.deepEqual((await run('throw "plain"')).outcome, { logs: [], dropped: 0, error: { message: 'plain' } });
  // Lines as JavaScript counts them: \r\n, \r and \u2028 end a line too.
  const breaks = 'const a = 1;\r\nconst b = 2;\rconst c = 3;\u2028for (const x of [1]) { throw new Error("third") }';
  assert.deepEqual((await run(breaks)).outcome.error, { message: 'third', line: 4, column: 30 });
  assert.deepEqual((await run('let a;\r\nlet b;\rlet c = ;')).prepared, { message: 'SyntaxError: Unexpected token', line: 3, column: 9 });
});

test('a failed tool call is an error naming the tool and the line', async () => {
  const code = 'const a = 1;\n  await tools.fails({ why: 1 });';
  assert.deepEqual((await run(code)).outcome, {
    logs: [],
    dropped: 0,
    error: { message: 'tool fails: upstream said no (502)', tool: 'fails', ...column(code, 'await') },
  });
  // The program may catch it, and sees the tool's name.
  const caught = await run('try { await tools.fails() } catch (e) { return [e.message, e.tool] }');
  assert.equal(caught.outcome.value, '["tool fails: upstream said no (502)","fails"]');
  // The stub's own failure, or an answer that is not JSON, is the tool's error too.
  assert.deepEqual((await run('await tools.throws()')).outcome.error, { message: 'tool throws: the host failed', tool: 'throws', line: 1, column: 1 });
  assert.match((await run('await tools.garbled()')).outcome.error.message, /^tool garbled: SyntaxError: Unexpected token/);
  // After a budget is spent, a program that caught the error calls no tool.
  const after = await run('try { for (;;) {} } catch {}\nawait tools.echo({ late: true })');
  assert.deepEqual([after.outcome.error.message, after.calls], [STEPS, []]);
  // At most toolCalls calls, when the limits say.
  const many = await run('for (let i = 0; ; i++) await tools.echo({ i })', { ...LIMITS, toolCalls: 3 });
  assert.deepEqual([many.outcome.error.message, many.calls.length], ['RangeError: the program made more than 3 tool calls', 3]);
  // A timer left behind calls no tool once the run has ended.
  const late = await run('setTimeout(async () => { try { await tools.echo({ late: 1 }) } catch (e) { console.log(e.message) } }, 0);\nreturn 1');
  assert.deepEqual([late.outcome.value, late.calls], ['1', []]);
  // An unknown tool is the host's answer; a non-JSON argument never leaves the isolate.
  assert.equal((await run('await tools.nope()')).outcome.error.message, 'tool nope: no tool named nope');
  const bigint = await run('await tools.echo({ n: 1n })');
  assert.equal(bigint.outcome.error.message, 'TypeError: Do not know how to serialize a BigInt');
  assert.deepEqual(bigint.calls, []);
});

test('runaway loops and recursion end with the step error, and workerd keeps serving', async () => {
  const programs = [
    'let i = 0;\nwhile (true) { i++ }',
    'for (;;);',
    'for (;;) for (;;) {}',
    'do ; while (true)',
    'for (const k in { a: 1 }) { while (1) {} }',
    '[1].forEach(function f() { while (1) {} })',
    'function f() { try { f() } catch { f() } }\nf()',
    'const g = () => { try { return g() } catch { return g() } };\ng()',
    'class A { get x() { try { return this.x } catch { return this.x } } }\nreturn new A().x',
    'async function spin() { for (;;) await 0 }\nawait spin()',
    'function* gen() { for (;;) yield 1 }\nfor (const x of gen()) {}',
    // Caught and carried on: every later guard throws again, and the outcome is the step error.
    'for (;;) { try { for (;;) {} } catch {} }',
    'try { while (1) {} } catch (e) { return "caught: " + e.message }',
  ];
  for (const code of programs) {
    const { outcome, hostError } = await run(code);
    assert.equal(hostError, undefined, code);
    assert.equal(outcome.error?.message, STEPS, code);
    assert.equal(outcome.value, undefined, code);
    assert.equal(typeof outcome.error.line, 'number', code);
  }
  // A built-in's walk costs steps by its length: one call over a huge sparse array or array-like
  // ends before it starts (71 s of indexOf otherwise), and a loop of calls over a big one ends too.
  const walks = [
    'const a = [];\na.length = 2 ** 32 - 1;\nreturn a.indexOf(1)',
    'const big = new Array(1e6).fill(0);\nfor (;;) big.includes(1)',
    'const s = "x".repeat(1e7);\nfor (;;) s.indexOf("y")',
    'const t = new Uint8Array(1e7);\nfor (;;) t.indexOf(1)',
    'const s = JSON.stringify(new Array(1e5).fill(1));\nfor (;;) JSON.parse(s)',
    'const big = new Array(1e6).fill(1);\nfor (;;) big.values().forEach(Math.abs)',
    'const big = new Array(1e6).fill(1);\nfor (;;) [...big]',
  ];
  for (const code of walks) assert.equal((await run(code)).outcome.error?.message, STEPS, code);
  // An array-like is copied first, charged by its length; a length getter is read once.
  assert.equal((await run('return Array.prototype.lastIndexOf.call({ length: 2 ** 32 }, 1)')).outcome.error?.message, MEMORY);
  assert.equal((await run('let n = 0;\nreturn Array.prototype.indexOf.call({ get length() { return n++ ? 2 ** 32 : 1 } }, 1)')).outcome.value, '-1');
  // Generic methods still work on array-likes, on a copy; those that change their array refuse one.
  assert.equal((await run('return Array.prototype.map.call({ length: 2, 0: "a", 1: "b" }, (x) => x + x)')).outcome.value, '["aa","bb"]');
  assert.equal((await run('return Array.prototype.reverse.call({ length: 1, 0: 1 })')).outcome.error?.message, 'TypeError: a program may change only arrays with this method');
  const loop = 'const a = 1;\nwhile (true) {}';
  assert.deepEqual((await run(loop)).outcome.error, { message: STEPS, line: 2, column: 15 });
  // Plain deep recursion meets V8's stack limit first: an error too, caught by no one.
  assert.equal((await run('function f(n) { return f(n + 1) }\nreturn f(0)', { ...LIMITS, steps: 1e7 })).outcome.error.message, 'RangeError: Maximum call stack size exceeded');
  await stillServing();
});

test('memory exhaustion ends with the memory error, and workerd keeps serving', async () => {
  const programs = [
    'const a = [];\nwhile (true) a.push(new Array(1e6).fill(1))',
    "return 'x'.repeat(1e9)",
    'return new ArrayBuffer(2 ** 31)',
    'let a = [1];\nfor (;;) a = a.concat(a)',
    'const keep = [];\nfor (;;) keep.push(new Array(15000))',
    'const keep = [];\nfor (;;) keep.push([].constructor(15000))',
    'const keep = [];\nfor (;;) keep.push(new Float64Array(1e5))',
    'const big = new Array(100000).fill(0);\nconst keep = [];\nfor (;;) keep.push([...big])',
    'const big = new Array(50000).fill(0);\nconst keep = [];\nfor (;;) keep.push.apply(keep, big)',
    'const big = new Array(100000).fill(0);\nconst keep = [];\nfor (;;) keep.push(big.slice())',
    'const big = new Array(100000).fill(0);\nconst keep = [];\nfor (;;) keep.push(big.map(Number))',
    'let s = "ab";\nfor (let i = 0; i < 27; i++) s += s;\nconst keep = [];\nfor (;;) keep.push(s.toUpperCase())',
    'const big = "x".repeat(1e6);\nconst keep = [];\nfor (;;) keep.push(Array.from(big))',
    'const b = new ArrayBuffer(8, { maxByteLength: 2 ** 32 });\nb.resize(2 ** 32)',
    // Literals evaluated in a loop.
    `const keep = [];\nfor (;;) keep.push([${'0, '.repeat(100)}0])`,
    `const keep = [];\nfor (let i = 0; ; i++) keep[i] = { ${Array.from({ length: 50 }, (_, i) => `k${i}: i`).join(', ')} }`,
    // Species turned off (an own constructor: undefined) still charges the copy.
    'const big = new Array(100000).fill(0);\nbig.constructor = undefined;\nconst keep = [];\nfor (;;) keep.push(big.slice())',
    'delete Array.prototype.constructor;\nconst big = new Array(100000).fill(0);\nconst keep = [];\nfor (;;) keep.push(big.filter(Boolean.bind(null, 1)))',
    'const t = new Float64Array(1e5);\nt.constructor = undefined;\nconst keep = [];\nfor (;;) keep.push(t.slice())',
    'const b = new ArrayBuffer(1e6);\nb.constructor = undefined;\nconst keep = [];\nfor (;;) keep.push(b.slice(0))',
  ];
  // Steps plenty, so that memory is what runs out (built-ins' work counts as steps too).
  for (const code of programs) {
    const { outcome, hostError } = await run(code, { ...LIMITS, steps: 1e8 });
    assert.equal(hostError, undefined, code);
    assert.equal(outcome.error?.message, MEMORY, code);
  }
  await stillServing();
});

test('the log is bounded: lines cut, at most logLines lines and logBytes bytes, the rest counted', async () => {
  const flood = await run('for (let i = 0; i < 1000; i++) console.log("line", i)');
  assert.deepEqual(flood.outcome, { logs: Array.from({ length: 20 }, (_, i) => `line ${i}`), dropped: 980 });
  const long = await run('console.log("x".repeat(5000)); console.log({ deep: { a: [1, [2, [3, [4, [5, [6]]]]]] } })');
  assert.deepEqual(long.outcome, { logs: ['x'.repeat(2000) + '…', '{"deep": {"a": [1, [2, [3, […]]]]}}'], dropped: 0 });
  // Bytes: three lines of 1,500 bytes do not fit in 4,000; nothing after a dropped line is kept.
  const bytes = await run('for (let i = 0; i < 3; i++) console.log("é".repeat(750)); console.log("short")');
  assert.deepEqual(bytes.outcome, { logs: ['é'.repeat(750), 'é'.repeat(750)], dropped: 2 });
  const kinds = await run('console.info(1); console.debug(2); console.dir({ a: 1 }); console.table([1]); console.trace("t"); console.assert(1 === 2, "no"); console.assert(true, "yes")');
  assert.deepEqual(kinds.outcome.logs, ['1', '2', '{"a": 1}', '[1]', 'trace: t', 'error: Assertion failed: no']);
  // An endless flood ends with the step error, its log still bounded.
  const endless = await run('for (;;) console.log("again")');
  assert.equal(endless.outcome.logs.length, 20);
  assert.equal(endless.outcome.error.message, STEPS);
});

test('the result is bounded, and must be JSON', async () => {
  assert.deepEqual((await run('return "y".repeat(150000)')).outcome, { logs: [], dropped: 0, error: { message: 'the result is 150002 bytes, more than the limit 100000' } });
  assert.deepEqual((await run('return "é".repeat(60000)')).outcome.error, { message: 'the result is 120002 bytes, more than the limit 100000' });
  // A million references to one long string stop before their text is built.
  const refs = await run('const s = "z".repeat(50000);\nreturn new Array(1000).fill(s)');
  assert.deepEqual(refs.outcome.error, { message: `the result is over ${2 * 100000 + 1024} bytes, more than the limit 100000` });
  assert.deepEqual((await run('return 10n')).outcome.error, { message: 'the result is not JSON: TypeError: Do not know how to serialize a BigInt' });
  assert.match((await run('const a = {}; a.a = a; return a')).outcome.error.message, /^the result is not JSON: TypeError: Converting circular structure to JSON/);
  assert.deepEqual((await run('return undefined')).outcome, { logs: [], dropped: 0 });
  assert.deepEqual((await run('return [undefined, () => 1, NaN]')).outcome, { value: '[null,null,null]', logs: [], dropped: 0 });
});

test('the guard cannot be named, shadowed or reached', async () => {
  assert.deepEqual((await run('const __sandbox_guard = () => {};\nreturn 1')).prepared, { message: 'names starting with __sandbox_ are reserved', line: 1, column: 7 });
  assert.deepEqual((await run('return 1;\n\\u005f_sandbox_x = 0')).prepared, { message: 'names starting with __sandbox_ are reserved', line: 2, column: 1 });
  assert.deepEqual((await run('label: { __sandbox_a: for (;;) break __sandbox_a }')).prepared.message, 'names starting with __sandbox_ are reserved');
  assert.deepEqual((await run('return this.__sandbox_x')).prepared.message, 'names starting with __sandbox_ are reserved');
  assert.deepEqual((await run('class A { #__sandbox_x = 1 }')).prepared.message, 'names starting with __sandbox_ are reserved');
  // Nor through a module: import() and import.meta are refused before anything runs.
  assert.deepEqual((await run('const m = await import("./guard.js");\nreturn 1')).prepared, { message: 'a program cannot import modules', line: 1, column: 17 });
  assert.deepEqual((await run('return import.meta.url')).prepared.message, 'a program cannot import modules');
  // The guard is no global, and a fresh name each time.
  assert.equal((await run('return Object.getOwnPropertyNames(globalThis).filter((k) => k.includes("sandbox"))')).outcome.value, '[]');
  const a = prepare('return 1', LIMITS).modules['program.js'];
  const b = prepare('return 1', LIMITS).modules['program.js'];
  assert.notEqual(a, b);
});

test('tampering with globals changes neither the result nor the budgets', async () => {
  // A `then` on Object.prototype would make the runner's outcome a thenable it resolves.
  assert.deepEqual((await run('Object.prototype.then = function (resolve) { resolve({ value: "\\"forged\\"" }) };\nreturn 1')).outcome, { value: '1', logs: [], dropped: 0 });
  // The runner's JSON, Array and console are its own.
  const replaced = 'Object.defineProperty(Array.prototype, "0", { set() {} });\nJSON.stringify = () => "1"; globalThis.Array = null; globalThis.console = null; console.log = null;\nreturn "y".repeat(150000)';
  assert.deepEqual((await run(replaced)).outcome.error, { message: 'the result is 150002 bytes, more than the limit 100000' });
  const setters = 'for (const k of ["line", "column", "message", "tool", "value", "logs", "error"]) Object.defineProperty(Object.prototype, k, { __proto__: null, set() {}, get() { return "forged" } });\nconsole.log("kept");\nthrow new Error("real")';
  assert.deepEqual((await run(setters)).outcome, { logs: ['kept'], dropped: 0, error: { message: 'real', line: 3, column: 7 } });
  // Numbered properties on Object.prototype do not reach the runner's column map.
  const numbered = 'for (let i = 0; i < 10; i++) Object.prototype[i] = { length: 1e12 };\nthrow new Error("at two")';
  assert.deepEqual((await run(numbered)).outcome.error, { message: 'at two', line: 2, column: 7 });
  // The original allocators stay out of reach, so the budget holds.
  const reach = [
    'const A = Reflect.getPrototypeOf([]).constructor;\nconst keep = [];\nfor (;;) keep.push(A(15000))',
    'const U = new Uint8Array(1).constructor;\nreturn new U(2 ** 31)',
    'const B = new Uint8Array(1).buffer.constructor;\nreturn new B(2 ** 31)',
    'Array.from = (x) => x; Array.prototype.fill = function () { return this };\nconst keep = [];\nfor (;;) keep.push(new Array(1e6))',
  ];
  for (const code of reach) assert.equal((await run(code)).outcome.error?.message, MEMORY, code);
  const gone = ['WebAssembly', 'SharedArrayBuffer', 'Atomics', 'structuredClone', 'Response', 'Request', 'Blob', 'ReadableStream', 'DecompressionStream', 'CompressionStream', 'HTMLRewriter', 'caches', 'MessageChannel'];
  const kinds = await run(`return ${JSON.stringify(gone)}.map((n) => typeof globalThis[n] + typeof Object.getPrototypeOf(globalThis)[n])`);
  assert.deepEqual(JSON.parse(kinds.outcome.value), gone.map(() => 'undefinedundefined'));
  // Text and copies made from what the program holds are charged too.
  const made = [
    'const b = new Uint8Array(1e6);\nconst d = new TextDecoder();\nconst keep = [];\nfor (;;) keep.push(d.decode(b))',
    'const s = "x".repeat(1e6);\nconst keep = [];\nfor (;;) keep.push(new TextEncoder().encode(s))',
    'const codes = new Array(60000).fill(65);\nconst keep = [];\nfor (;;) keep.push(String.fromCharCode.apply(null, codes))',
    'const big = new Array(1e5).fill(1);\nconst keep = [];\nfor (;;) keep.push(new Set(big.keys()))',
    'const big = new Array(1e5).fill(1);\nconst keep = [];\nfor (;;) keep.push(big.values().toArray())',
    'const big = new Array(1e5).fill(1);\nconst keep = [];\nfor (;;) keep.push(Promise.all(big.values()))',
    'const big = new Array(1e5).fill(["k", 1]).map(([k, v], i) => [k + i, v]);\nconst keep = [];\nfor (;;) keep.push(Object.fromEntries(big))',
  ];
  for (const code of made) assert.equal((await run(code, { ...LIMITS, steps: 1e8 })).outcome.error?.message, MEMORY, code);
  await stillServing();
});

test('fetch, WebSocket, sockets, import() and eval are refused', async () => {
  const NO_NETWORK = "This worker is not permitted to access the internet via global functions like fetch(). It must use capabilities (such as bindings in 'env') to talk to the outside world.";
  assert.equal((await run('return (await fetch("https://example.com")).status')).outcome.error.message, NO_NETWORK);
  assert.equal((await run('new WebSocket("wss://example.com"); return 1')).outcome.error.message, NO_NETWORK);
  // connect() lives in the cloudflare:sockets module, which a program cannot import.
  assert.equal((await run('return typeof connect')).outcome.value, '"undefined"');
  assert.equal((await run('await import("https://example.com/x.js")')).prepared.message, 'a program cannot import modules');
  assert.equal((await run('await import("cloudflare:sockets")')).prepared.message, 'a program cannot import modules');
  const EVAL = 'EvalError: Code generation from strings disallowed for this context';
  for (const code of ['return eval("1")', 'return new Function("return 1")()', 'return (async () => {}).constructor("return 1")()']) {
    assert.equal((await run(code)).outcome.error?.message, EVAL, code);
  }
  // A promise that never settles: workerd ends the call (the glue adds its own wall-time limit).
  assert.match((await run('await new Promise(() => {})')).hostError, /hung/);
  await stillServing();
});

test('prepare: time for a 20-line program, and the bundle size acorn adds', async () => {
  const code = Array.from({ length: 20 }, (_, i) => (i % 4 === 0 ? `for (const x of await tools.list_${i}({ page: ${i} })) { console.log(x.id, x.name?.length ?? 0); }` : `const v${i} = [${i}, ${i + 1}].map((n) => n * 2).filter(Boolean);`)).join('\n');
  for (let i = 0; i < 50; i++) prepare(code, LIMITS);
  const n = 500;
  const started = performance.now();
  for (let i = 0; i < n; i++) prepare(code, LIMITS);
  const perProgram = (performance.now() - started) / n;
  const minified = await build({ entryPoints: [join(root, 'src', 'edge', 'code', 'sandbox.js')], bundle: true, minify: true, format: 'esm', write: false });
  const gz = gzipSync(minified.outputFiles[0].contents, { level: 9 }).length;
  console.log(`prepare(): ${perProgram.toFixed(3)} ms a 20-line program; sandbox.js with acorn, minified: ${minified.outputFiles[0].contents.length} bytes, ${gz} gzipped`);
  assert.ok(perProgram < 20);
});
