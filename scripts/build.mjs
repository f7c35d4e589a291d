//! Builds the release worker (wasm-opt on): the wasm and its JS. The configuration is not an
//! input: the module imports it as `mcp-edge-config`, which wrangler (an alias in wrangler.toml)
//! or Miniflare (scripts/miniflare.mjs) supplies, so an edit of the configuration never runs
//! cargo. Skips the build when no input changed since the last one into the same directory.
//!
//!   node scripts/build.mjs [--out-dir build]
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root, run, setup } from './setup.mjs';

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

function inputsHash() {
  const hash = createHash('sha256');
  const inputs = [...files(join(root, 'src')).sort(), 'Cargo.toml', 'Cargo.lock', '.cargo/config.toml', 'build.rs', 'scripts/build.mjs'];
  for (const f of inputs) {
    const path = resolve(root, f);
    hash.update(path).update(existsSync(path) ? readFileSync(path) : '');
  }
  return hash.digest('hex');
}

/** The opt-level of Cargo.toml's release profile. */
function cargoOptLevel() {
  const level = /\[profile\.release\][^[]*?opt-level\s*=\s*"?([0-9sz])"?/.exec(readFileSync(join(root, 'Cargo.toml'), 'utf8'));
  if (!level) throw new Error('[build] Cargo.toml has no opt-level in [profile.release]');
  return level[1];
}

/** worker-build runs esbuild with its own flags; this one adds that the configuration stays an
 *  import of the module, for wrangler or Miniflare to resolve. */
function esbuildLeavingConfig() {
  const dir = join(root, 'target');
  mkdirSync(dir, { recursive: true });
  const wrapper = join(dir, 'esbuild-leaving-config');
  writeFileSync(wrapper, `#!/bin/sh\nexec "${join(root, 'node_modules', '.bin', 'esbuild')}" --external:mcp-edge-config "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

export function build({ outDir = 'build', testHooks = false } = {}) {
  const stamp = join(root, outDir, '.inputs');
  // MCP_EDGE_KEEP_NAMES=1 keeps function names, for CPU profiles (bench/profile.mjs).
  const keepNames = process.env.MCP_EDGE_KEEP_NAMES === '1';
  // MCP_EDGE_OPT_LEVEL=3|2|s|z builds at another optimization level (rustc's and wasm-opt's), to
  // compare with bench/ab.mjs; Cargo.toml's profile.release sets the shipped one.
  const optLevel = process.env.MCP_EDGE_OPT_LEVEL ?? cargoOptLevel();
  const hash = inputsHash() + (testHooks ? '+hooks' : '') + (keepNames ? '+names' : '') + `+O${optLevel}`;
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === hash && existsSync(join(root, outDir, 'index.js'))) {
    return join(root, outDir);
  }
  // A test build gets hooks: forced panics (tests/e2e/panic.test.mjs) and alarms on demand.
  workerBuild(root, join(root, outDir), optLevel, { MCP_EDGE_TEST_HOOKS: testHooks ? '1' : '0' });
  leanEntrypoint(join(root, outDir, 'index.js'));
  exportCheck(join(root, outDir, 'index.js'));
  microtasksByPromise(join(root, outDir, 'index.js'));
  wasmOpt(join(root, outDir, 'index_bg.wasm'), optLevel, keepNames);
  writeFileSync(stamp, hash);
  return join(root, outDir);
}

const bin = (name) => join(root, 'node_modules', '.bin', name);

/** worker-build of the crate in `crateDir` into `outDir` at `optLevel`, with the registries'
 *  copies of the tools it would download. */
function workerBuild(crateDir, outDir, optLevel, env = {}) {
  run('worker-build', ['--release', '--out-dir', outDir], {
    cwd: crateDir,
    env: { ...process.env, ...env, CARGO_PROFILE_RELEASE_OPT_LEVEL: optLevel, WASM_BINDGEN_BIN: 'wasm-bindgen', ESBUILD_BIN: esbuildLeavingConfig(), WASM_OPT_BIN: bin('wasm-opt') },
  });
}

/** wasm-opt runs here rather than in worker-build (Cargo.toml turns its pass off), at the level
 *  rustc built with. worker-build would keep the function names section (a sixth of the module)
 *  for stack traces; panics still log their message and source location without it, and every
 *  isolate that starts cold has less to download and compile. */
function wasmOpt(wasm, optLevel, keepNames = false) {
  // The feature set worker-build itself enables: --all-features would let binaryen use
  // encodings workerd does not accept.
  const features = ['mutable-globals', 'sign-ext', 'nontrapping-float-to-int', 'bulk-memory', 'multivalue', 'reference-types', 'exception-handling'];
  // Code rustc built at "z" gets binaryen's -Os: its -Oz makes the module smaller but its gzip
  // larger (973,540 bytes against 972,287 at -Os, issue 42), and gzip is what the cap counts.
  // --converge runs the passes again until they change nothing: 1.2 KB of gzip off one run at
  // issue 44 (1,048,941 → 1,047,741 bytes), for about 20 s more of building.
  const level = optLevel === 'z' ? 's' : optLevel;
  run(bin('wasm-opt'), [`-O${level}`, '--converge', keepNames ? '-g' : '--strip-debug', ...features.map((f) => `--enable-${f}`), wasm, '-o', wasm]);
}

/** The bench's Rust floor (bench/peers/rust-floor), built as the Worker is, at its opt-level:
 *  the same wasm-opt pass and microtask scheduling, a plain handler object. Skipped when its
 *  sources did not change. */
export function buildRustFloor(outDir = join(root, '.mcp-edge', 'rust-floor')) {
  const crateDir = join(root, 'bench', 'peers', 'rust-floor');
  const hash = createHash('sha256');
  for (const f of ['Cargo.toml', 'Cargo.lock', 'src/lib.rs']) hash.update(readFileSync(join(crateDir, f)));
  // This script patches its output too.
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  const stamp = join(outDir, '.inputs');
  const digest = hash.digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) return outDir;
  workerBuild(crateDir, outDir, '2', { CARGO_TARGET_DIR: join(root, 'target', 'rust-floor') });
  leanEntrypoint(join(outDir, 'index.js'), { rescue: false });
  microtasksByPromise(join(outDir, 'index.js'));
  wasmOpt(join(outDir, 'index_bg.wasm'), '2');
  writeFileSync(stamp, digest);
  return outDir;
}

// worker-build exports the fetch handler as a `WorkerEntrypoint` class behind a Proxy, so every
// request constructs an entrypoint, a Proxy with a dozen traps and another around `fetch`, and
// awaits once more. A plain handler object does the same work without them: it reinstantiates the
// module after a panic (the shim's own function), and marks a trap as critical when a call
// throws or rejects with one. The Durable Object class keeps its Proxy, which recreates objects
// built before a reinstantiation. When worker-build's output no longer has the expected shape,
// its own entrypoint stays. esbuild's minified names may hold `$`, which `\w` does not match.
function leanEntrypoint(file, { rescue = true } = {}) {
  const js = readFileSync(file, 'utf8');
  const reinit = js.match(/function ([\w$]+)\(\)\{[\w$]+\.criticalError&&\(console\.log\("Reinitializing Wasm application"\)/)?.[1];
  const mark = js.match(/addEventListener\("error",[\w$]+=>\{([\w$]+)\([\w$]+\.error\)\}\)/)?.[1];
  const entry = js.match(/var ([\w$]+)=class extends [\w$]+\{\};(?:\1\.prototype\.[\w$]+=[\w$]+;)*\1\.prototype\.fetch=function\(([\w$]+)\)\{return ([\w$]+)\.call\(this,\2,this\.env,this\.ctx\)\};(?:\1\.prototype\.queue=function\(([\w$]+)\)\{return ([\w$]+)\.call\(this,\4,this\.env,this\.ctx\)\};)?/);
  const exported = js.match(/export\{[^}]*[{,]([\w$]+) as default\}/);
  if (!reinit || !mark || !entry || !exported || !js.includes(`${exported[1]}=new Proxy(${entry[1]},`)) {
    console.error('[build] worker-build output has an unexpected shape; keeping its entrypoint');
    return;
  }
  const [, , , fetch, , queue] = entry;
  // Each handler runs through src/edge/rescue.js, which answers it should the module trap (the
  // bench's Rust floor, bench/peers/rust-floor, has no rescue).
  const call = `try{return f(a,e,c).then(void 0,x=>{${mark}(x);throw x})}catch(x){${mark}(x);throw x}`;
  const handlers =
    `function __mcpEdgeRun(k,f,a,e,c){${reinit}();${rescue ? `return globalThis.__mcpEdgeRescued(k,()=>{${call}})` : call}}` +
    `var __mcpEdgeEntry={fetch(r,e,c){return __mcpEdgeRun("fetch",${fetch},r,e,c)}${queue ? `,queue(b,e,c){return __mcpEdgeRun("queue",${queue},b,e,c)}` : ''}};`;
  const at = exported.index;
  const patched = js.slice(0, at) + handlers + exported[0].replace(`${exported[1]} as default`, '__mcpEdgeEntry as default') + js.slice(at + exported[0].length);
  writeFileSync(file, rescue ? rescuedObjects(patched) : patched);
}

// The Durable Objects' methods, called through the shim's Proxy, run through
// src/edge/rescue.js too: a trap answers a fetch with a 500 and fails an alarm, which the runtime
// retries. The Proxy's trap for plain functions (what wasm-bindgen's methods are) is
// `apply(b,F,C){K();try{return b.apply(F,C)}catch(R){throw G(R),R}}`, inside `get(_,s,f)`, whose
// `s` names the method. Without that shape, the build fails: a module whose traps leave requests
// unanswered is not one to ship.
function rescuedObjects(js) {
  const shape = /(get\(([\w$]+),([\w$]+),([\w$]+)\)\{.{0,400}?new Proxy\([\w$]+,\{apply\(([\w$]+),([\w$]+),([\w$]+)\)\{[\w$]+\(\);try\{return )\5\.apply\(\6,\7\)\}/;
  const found = js.match(shape);
  if (!found || !js.includes('__mcpEdgeRescued=')) throw new Error('[build] worker-build output has an unexpected shape: the Durable Objects cannot be rescued after a trap');
  const [, head, , name, , fn, self, args] = found;
  return js.replace(shape, `${head}globalThis.__mcpEdgeRescued(${name},()=>${fn}.apply(${self},${args}))}`);
}

// wasm-bindgen's futures run their woken tasks in a microtask, scheduled with `queueMicrotask`
// when the global has one, else with `then` on a resolved promise. workerd's `queueMicrotask`
// wraps every callback it is given (to carry the request's context along), which costs about
// 3 µs a call against 0.1 µs for `then`, and a request wakes its tasks several times. So the
// build makes the detection find none. Promise reactions keep their request's context in
// workerd by themselves.
function microtasksByPromise(file) {
  const js = readFileSync(file, 'utf8');
  const detect = /(__wbg_queueMicrotask_[\w$]+:function\(([\w$]+)\)\{)return \2\.queueMicrotask\}/g;
  const found = js.match(detect) ?? [];
  if (found.length !== 1) {
    console.error('[build] worker-build output has an unexpected shape; microtasks keep queueMicrotask');
    return;
  }
  writeFileSync(file, js.replace(detect, '$1}'));
}

// `mcp-edge check` runs this module under Node (bin/check.mjs) and calls the wasm's
// `check_config`, which worker-build made a method of its entrypoint class only. The bundle
// exports it by name too.
function exportCheck(file) {
  const js = readFileSync(file, 'utf8');
  const local = js.match(/\.prototype\.check_config=([\w$]+)[;,]/)?.[1];
  const exported = js.match(/export\{[^}]*\}/);
  if (!local || !exported) throw new Error('[build] worker-build output has an unexpected shape: check_config not found');
  writeFileSync(file, js.replace(exported[0], exported[0].replace(/\}$/, `,${local} as check_config}`)));
}

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  // `wrangler dev` and `wrangler deploy` run this with no arguments.
  const out = build({ outDir: arg('--out-dir', 'build') });
  const wasm = readdirSync(out).filter((f) => f.endsWith('.wasm'));
  for (const w of wasm) console.error(`[build] ${join(out, w)}: ${statSync(join(out, w)).size} bytes`);
}
