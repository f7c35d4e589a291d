//! Builds the release worker (wasm-opt on): the wasm and its JS. The configuration is not an
//! input: the module imports it as `mcp-edge-config`, which wrangler (an alias in wrangler.toml)
//! or Miniflare (scripts/miniflare.mjs) supplies, so an edit of the configuration never runs
//! cargo. Skips the build when no input changed since the last one into the same directory.
//! The steps are the project's own: cargo, the wasm-bindgen CLI (the version Cargo.lock pins),
//! scripts/entry.js bundled with wasm-bindgen's glue by esbuild, and wasm-opt (npm's binaryen).
//!
//!   node scripts/build.mjs [--out-dir build]
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESTIMATES, progress, root, run, seconds, setup, wasmBindgenReady } from './setup.mjs';

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

function inputsHash() {
  const hash = createHash('sha256');
  const inputs = [...files(join(root, 'src')).sort(), 'Cargo.toml', 'Cargo.lock', '.cargo/config.toml', 'build.rs', 'scripts/build.mjs', 'scripts/entry.js'];
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

/** The settings of a build of the current sources, and the stamp that names them. */
function settings(testHooks) {
  // MCP_EDGE_KEEP_NAMES=1 keeps function names, for CPU profiles (bench/profile.mjs).
  const keepNames = process.env.MCP_EDGE_KEEP_NAMES === '1';
  // MCP_EDGE_OPT_LEVEL=3|2|s|z builds at another optimization level (rustc's and wasm-opt's), to
  // compare with bench/ab.mjs; Cargo.toml's profile.release sets the shipped one.
  const optLevel = process.env.MCP_EDGE_OPT_LEVEL ?? cargoOptLevel();
  return { keepNames, optLevel, hash: inputsHash() + (testHooks ? '+hooks' : '') + (keepNames ? '+names' : '') + `+O${optLevel}` };
}

/** The stamp of the build in `outDir`, or '' when there is none. */
function stampIn(outDir) {
  const stamp = join(root, outDir, '.inputs');
  return existsSync(stamp) && existsSync(join(root, outDir, 'index.js')) ? readFileSync(stamp, 'utf8') : '';
}

export function build({ outDir = 'build', testHooks = false, optimize = true } = {}) {
  const { keepNames, optLevel, hash } = settings(testHooks);
  // The optimized build serves where an unoptimized one is asked for; not the other way round.
  const current = stampIn(outDir);
  if (current === hash || (!optimize && current === `${hash}+unoptimized`)) {
    return join(root, outDir);
  }
  // A test build gets hooks: forced panics (tests/e2e/panic.test.mjs) and alarms on demand.
  compile(root, join(root, outDir), optLevel, { env: { MCP_EDGE_TEST_HOOKS: testHooks ? '1' : '0' }, named: ['check_config'], keepNames, optimize, sandbox: true });
  writeFileSync(join(root, outDir, '.inputs'), optimize ? hash : `${hash}+unoptimized`);
  return join(root, outDir);
}

/** Whether `outDir` holds the release build of the current sources, wasm-opt's pass included. */
export function optimized(outDir = 'build') {
  return stampIn(outDir) === settings(false).hash;
}

const bin = (name) => join(root, 'node_modules', '.bin', name);

/** The crate's library name in `crateDir`: the wasm cargo writes is named after it. */
function libName(crateDir) {
  const name = /^\[package\][^[]*?^name\s*=\s*"([^"]+)"/m.exec(readFileSync(join(crateDir, 'Cargo.toml'), 'utf8'))?.[1];
  if (!name) throw new Error(`[build] ${crateDir}/Cargo.toml names no package`);
  return name.replaceAll('-', '_');
}

/**
 * The crate in `crateDir` built into `outDir`: the wasm (cargo), its bindings (the wasm-bindgen
 * CLI), the entry (scripts/entry.js) bundled with them by esbuild into `index.js`, and the wasm
 * through wasm-opt into `index_bg.wasm`. `env` adds to cargo's environment; `rescue`: the handlers
 * run through src/edge/rescue.js; `named`: exports of the glue the bundle exports by name too;
 * `sandbox`: code mode's sandbox bundled apart, into `codemode.js` (src/edge/code/lazy.js).
 */
function compile(crateDir, outDir, optLevel, { env = {}, rescue = true, named = [], keepNames = false, optimize = true, sandbox = false } = {}) {
  const started = Date.now();
  const targetDir = env.CARGO_TARGET_DIR ?? process.env.CARGO_TARGET_DIR ?? join(crateDir, 'target');
  progress(`build 1/3: cargo build of ${libName(crateDir)}: about ${ESTIMATES.cargo} s from nothing on 2 cores, less after an edit; then about ${ESTIMATES.glue + (optimize ? ESTIMATES.wasmOpt : 0)} s left`);
  // WASM_BINDGEN_USE_JS_SYS: the `worker` crate's futures are js-sys's (what worker-build set).
  run('cargo', ['build', '--lib', '--release', '--target', 'wasm32-unknown-unknown'], {
    cwd: crateDir,
    env: { ...process.env, ...env, CARGO_PROFILE_RELEASE_OPT_LEVEL: optLevel, WASM_BINDGEN_USE_JS_SYS: '1' },
  });
  progress(`cargo build done in ${seconds(started)}`);
  wasmBindgenReady();
  progress(`build 2/3: the glue (wasm-bindgen, scripts/entry.js, esbuild): about ${ESTIMATES.glue + (optimize ? ESTIMATES.wasmOpt : 0)} s left`);
  // Within the repository, wherever cargo's target is: esbuild resolves the glue's imports
  // (code mode's acorn) from node_modules above it.
  const glue = join(root, '.mcp-edge', 'glue', createHash('sha256').update(resolve(outDir)).digest('hex').slice(0, 12));
  rmSync(glue, { recursive: true, force: true });
  // --experimental-reset-state-function: `__wbg_reset_state`, the fresh instance after a trap;
  // --force-enable-abort-handler: every trap, not only a panic, reaches src/edge/rescue.js.
  run('wasm-bindgen', [join(targetDir, 'wasm32-unknown-unknown', 'release', `${libName(crateDir)}.wasm`), '--out-dir', glue, '--out-name', 'index', '--target', 'module', '--no-typescript', '--experimental-reset-state-function', '--force-enable-abort-handler']);
  const index = join(glue, 'index.js');
  writeFileSync(index, leanGlue(readFileSync(index, 'utf8')));
  writeFileSync(join(glue, 'entry.mjs'), entryModule(readFileSync(index, 'utf8'), glue, { rescue, named }));
  mkdirSync(outDir, { recursive: true });
  const js = join(outDir, 'index.js');
  run(bin('esbuild'), [join(glue, 'entry.mjs'), '--bundle', '--format=esm', '--minify', '--external:./index_bg.wasm', '--external:./codemode.js', '--external:cloudflare:*', '--external:mcp-edge-config', `--outfile=${js}.tmp`, '--log-level=warning']);
  checkBundle(readFileSync(`${js}.tmp`, 'utf8'), { rescue, named, sandbox, classes: classesOf(readFileSync(index, 'utf8')) });
  if (sandbox) {
    // Its own module, which the Worker imports when it prepares its first program.
    const codemode = join(outDir, 'codemode.js');
    run(bin('esbuild'), [join(crateDir, 'src', 'edge', 'code', 'sandbox.js'), '--bundle', '--format=esm', '--minify', `--outfile=${codemode}.tmp`, '--log-level=warning']);
    if (!/export\{[^}]*\bprepare\b/.test(readFileSync(`${codemode}.tmp`, 'utf8'))) throw new Error('[build] codemode.js does not export prepare');
    renameSync(`${codemode}.tmp`, codemode);
  }
  if (optimize) {
    progress(`build 3/3: wasm-opt: about ${ESTIMATES.wasmOpt} s left on 2 cores`);
    wasmOpt(join(glue, 'index_bg.wasm'), join(outDir, 'index_bg.wasm.tmp'), optLevel, keepNames);
  } else {
    // `npm start`'s first build: the module as rustc and wasm-bindgen made it, which workerd runs
    // as well; wasm-opt's follows (scripts/start.mjs).
    copyFileSync(join(glue, 'index_bg.wasm'), join(outDir, 'index_bg.wasm.tmp'));
  }
  renameSync(join(outDir, 'index_bg.wasm.tmp'), join(outDir, 'index_bg.wasm'));
  renameSync(`${js}.tmp`, js);
  // Nothing built belongs in git.
  writeFileSync(join(outDir, '.gitignore'), '*');
  progress(`built ${outDir} in ${seconds(started)}`);
}

/** The classes wasm-bindgen exports (the Durable Objects among them). */
function classesOf(glue) {
  return [...glue.matchAll(/^export class ([\w$]+) \{/gm)].map((m) => m[1]);
}

/**
 * wasm-bindgen's glue, as the Worker loads it: the wasm imported as the compiled module wrangler
 * and Miniflare supply (not `import source`, which esbuild and workerd's bundler do not take),
 * and microtasks scheduled by `then` on a resolved promise. js-sys's futures use `queueMicrotask`
 * when the global has one; workerd's wraps every callback it is given (to carry the request's
 * context along), which costs about 3 µs a call against 0.1 µs for `then`, and a request wakes
 * its tasks several times. So the glue's look-up of `queueMicrotask` finds none. Promise reactions
 * keep their request's context in workerd by themselves. Either line missing fails the build.
 */
function leanGlue(glue) {
  const edits = [
    [/^import source wasmModule from "\.\/index_bg\.wasm";$/gm, 'import wasmModule from "./index_bg.wasm";'],
    [/(__wbg_queueMicrotask_\w+: function\(arg0\) \{\s*const ret = )arg0\.queueMicrotask;/g, '$1undefined;'],
  ];
  for (const [from, to] of edits) {
    const found = glue.match(from)?.length ?? 0;
    if (found !== 1) throw new Error(`[build] wasm-bindgen's glue has ${found} of ${from}, not 1: scripts/build.mjs must follow its new shape`);
    glue = glue.replace(from, to);
  }
  // wasm-bindgen names a snippet once per `#[wasm_bindgen(module = …)]` block that imports from
  // it, each key bound to the same module namespace: wrangler's esbuild warns at every start and
  // reload of a duplicate key in an object literal. The first of each stays.
  const keys = new Set();
  return glue.replace(/^\s*("\.\/snippets\/[^"]+"): import\d+,\n/gm, (line, key) => (keys.has(key) ? '' : (keys.add(key), line)));
}

/** The module esbuild bundles: the glue behind scripts/entry.js's handlers and classes. */
function entryModule(glue, dir, { rescue, named }) {
  const lines = [`import * as wasm from './index.js';`, `import { entry } from ${JSON.stringify(join(root, 'scripts', 'entry.js'))};`];
  if (rescue) {
    // src/edge/rescue.js, where wasm-bindgen copied it (a snippets folder named by the crate's hash).
    const found = readdirSync(join(dir, 'snippets')).map((d) => join(dir, 'snippets', d, 'src', 'edge', 'rescue.js')).filter((f) => existsSync(f));
    if (found.length !== 1) throw new Error(`[build] wasm-bindgen's glue has ${found.length} copies of src/edge/rescue.js, not 1`);
    lines.push(`import { rescued } from ${JSON.stringify('./' + relative(dir, found[0]))};`);
  }
  lines.push(`const { handlers, durableObject } = entry(wasm${rescue ? ', rescued' : ''});`, 'export default handlers;');
  for (const name of classesOf(glue)) lines.push(`export const ${name} = durableObject(wasm.${name});`);
  if (named.length) lines.push(`export { ${named.join(', ')} } from './index.js';`);
  return lines.join('\n') + '\n';
}

/**
 * The bundle exports what the Worker's consumers take: the handler object as default, each class
 * (wrangler.toml's Durable Object among them), and the `named` functions (`check_config`, which
 * `mcp-edge check` calls); with the rescue and the fresh instance after a trap in it. A glue that
 * lost one of them fails the build, rather than shipping a Worker that strands requests.
 */
function checkBundle(js, { rescue, named, sandbox, classes }) {
  const exported = /export\{([^}]*)\}/.exec(js)?.[1].split(',').map((e) => e.trim().split(' as ').pop()) ?? [];
  const missing = ['default', ...classes, ...named].filter((name) => !exported.includes(name));
  const wanted = ['Reinitializing Wasm application', '__wbg_reset_state', ...(rescue ? ['the module trapped while serving this event'] : []), ...(sandbox ? ['import("./codemode.js")'] : [])].filter((s) => !js.includes(s));
  if (missing.length || wanted.length || /\.queueMicrotask\b/.test(js)) {
    throw new Error(`[build] the bundle has an unexpected shape: missing exports [${missing}], missing code [${wanted}]${/\.queueMicrotask\b/.test(js) ? ', a look-up of queueMicrotask' : ''}`);
  }
}

/** wasm-opt, at the level rustc built with, from `wasm` into `out`. Without the function names
 *  section (a sixth of the module), which worker-build kept for stack traces: panics still log
 *  their message and source location without it, and every isolate that starts cold has less to
 *  download and compile. */
function wasmOpt(wasm, out, optLevel, keepNames = false) {
  // The feature set worker-build enabled (rustc's wasm32 defaults and the exception handling of
  // wasm-bindgen's catch wrappers): --all-features would let binaryen use encodings workerd does
  // not accept.
  const features = ['mutable-globals', 'sign-ext', 'nontrapping-float-to-int', 'bulk-memory', 'multivalue', 'reference-types', 'exception-handling'];
  // Code rustc built at "z" gets binaryen's -Os: its -Oz makes the module smaller but its gzip
  // larger (973,540 bytes against 972,287 at -Os, issue 42), and gzip is what the cap counts.
  // --converge runs the passes again until they change nothing: 1.2 KB of gzip off one run at
  // issue 44 (1,048,941 → 1,047,741 bytes), for about 20 s more of building.
  const level = optLevel === 'z' ? 's' : optLevel;
  run(bin('wasm-opt'), [`-O${level}`, '--converge', keepNames ? '-g' : '--strip-debug', ...features.map((f) => `--enable-${f}`), wasm, '-o', out]);
}

/** The bench's Rust floor (bench/peers/rust-floor), built as the Worker is: at the Worker's
 *  opt-level (Cargo.toml's release profile), with the same glue, entry, wasm-opt pass and
 *  microtask scheduling, without the rescue. MCP_EDGE_FLOOR_OPT_LEVEL builds it at another level
 *  (the floor at 2, as it was built until issue 45, is in docs/performance.md). Skipped when its
 *  sources and level did not change. */
export function buildRustFloor(outDir = join(root, '.mcp-edge', 'rust-floor')) {
  const crateDir = join(root, 'bench', 'peers', 'rust-floor');
  const hash = createHash('sha256');
  for (const f of ['Cargo.toml', 'Cargo.lock', 'src/lib.rs']) hash.update(readFileSync(join(crateDir, f)));
  // Built as mcp-edge is: under the repository's .cargo/config.toml (its inline threshold) too.
  hash.update(readFileSync(join(root, '.cargo', 'config.toml')));
  // This script and the entry make its JS.
  hash.update(readFileSync(fileURLToPath(import.meta.url))).update(readFileSync(join(root, 'scripts', 'entry.js')));
  const level = process.env.MCP_EDGE_FLOOR_OPT_LEVEL ?? cargoOptLevel();
  hash.update(level);
  const stamp = join(outDir, '.inputs');
  const digest = hash.digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) return outDir;
  compile(crateDir, outDir, level, { env: { CARGO_TARGET_DIR: join(root, 'target', 'rust-floor') }, rescue: false });
  writeFileSync(stamp, digest);
  return outDir;
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
