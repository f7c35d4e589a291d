//! Installs what building and testing need, when it is missing: the wasm32 Rust target, the
//! wasm-bindgen CLI that matches Cargo.lock, and the npm packages. Quick when everything is
//! already there. On a first start the CLI's `cargo install` runs in the background while the
//! crate itself builds (scripts/build.mjs waits for it before its wasm-bindgen step), and each
//! step prints its time and what is left.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const root = dirname(dirname(fileURLToPath(import.meta.url)));

/** What each step of a first start takes on an otherwise idle 2-core machine of this project's
 *  type, in seconds, as measured there (docs/performance.md, "The first start"), for the
 *  estimates printed along the way. A busy machine takes longer. */
export const ESTIMATES = { npm: 30, wasmBindgen: 230, cargo: 180, glue: 5, wasmOpt: 110 };

const started = Date.now();
/** `since` (a Date.now()) to now, in seconds, for the progress lines. */
export const seconds = (since = started) => `${Math.round((Date.now() - since) / 1000)} s`;
/** A progress line, with the time since this process started. */
export function progress(line) {
  console.error(`[setup ${seconds()}] ${line}`);
}

function output(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: root });
  return r.status === 0 ? r.stdout.trim() : null;
}

export function run(cmd, args, options = {}) {
  console.error(`[setup] ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...options });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed with ${r.status ?? r.signal}`);
  }
}

/** The wasm-bindgen version Cargo.lock resolved; the CLI must match it exactly. */
export function lockedWasmBindgen() {
  const lock = readFileSync(join(root, 'Cargo.lock'), 'utf8');
  const m = lock.match(/\[\[package\]\]\nname = "wasm-bindgen"\nversion = "([^"]+)"/);
  if (!m) throw new Error('Cargo.lock has no wasm-bindgen package');
  return m[1];
}

const hasBindgen = () => (output('wasm-bindgen', ['--version']) ?? '').endsWith(` ${lockedWasmBindgen()}`);

/** The wasm-bindgen CLI's `cargo install`, when it runs in the background: its log, and the file
 *  its exit status lands in. */
let installing = null;

/** `cargo install` of the locked wasm-bindgen CLI. Only its `wasm-bindgen` binary, and without
 *  the TLS its test runner downloads browsers' drivers with: a third less to compile. */
function bindgenInstall() {
  return ['install', 'wasm-bindgen-cli', '--version', lockedWasmBindgen(), '--locked', '--no-default-features', '--bin', 'wasm-bindgen'];
}

/** Starts the CLI's install in the background (a node process that records cargo's status), for
 *  the crate's build to run beside it: the two overlap on 2 cores, each waiting on its own
 *  single-threaded steps (the link with LTO, the CLI's largest crates). */
function installBindgenInBackground() {
  const dir = join(root, '.mcp-edge');
  mkdirSync(dir, { recursive: true });
  const log = join(dir, 'wasm-bindgen-install.log');
  const status = join(dir, 'wasm-bindgen-install.status');
  rmSync(status, { force: true });
  const fd = openSync(log, 'w');
  const script = `const r=require('child_process').spawnSync('cargo',${JSON.stringify(bindgenInstall())},{stdio:'inherit'});require('fs').writeFileSync(${JSON.stringify(status)},String(r.status??r.signal))`;
  const child = spawn(process.execPath, ['-e', script], { cwd: root, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.unref();
  installing = { log, status, since: Date.now() };
  progress(`cargo ${bindgenInstall().join(' ')}: in the background, beside the build (about ${ESTIMATES.wasmBindgen} s; log: ${log})`);
}

/** The wasm-bindgen CLI is there, at the locked version: waits for its background install, or
 *  installs it now. */
export function wasmBindgenReady() {
  if (installing) {
    const left = Math.max(0, ESTIMATES.wasmBindgen - Math.round((Date.now() - installing.since) / 1000));
    if (!existsSync(installing.status)) progress(`waiting for the wasm-bindgen CLI's install (started ${seconds(installing.since)} ago${left ? `, about ${left} s left` : ''})`);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (!existsSync(installing.status)) Atomics.wait(pause, 0, 0, 500);
    const code = readFileSync(installing.status, 'utf8');
    const { log, since } = installing;
    installing = null;
    if (code !== '0') throw new Error(`cargo ${bindgenInstall().join(' ')} failed with ${code}: see ${log}`);
    progress(`the wasm-bindgen CLI installed in ${seconds(since)}`);
  }
  if (!hasBindgen()) run('cargo', bindgenInstall());
  if (!hasBindgen()) throw new Error(`wasm-bindgen ${lockedWasmBindgen()} is installed but not on PATH: add cargo's bin folder (~/.cargo/bin, or $CARGO_INSTALL_ROOT/bin) to PATH`);
}

function rust() {
  const targets = output('rustup', ['target', 'list', '--installed']) ?? '';
  if (!targets.split('\n').includes('wasm32-unknown-unknown')) {
    run('rustup', ['target', 'add', 'wasm32-unknown-unknown']);
  }
  if (!installing && !hasBindgen()) {
    progress(`first start: the wasm-bindgen CLI and the crate build side by side, then the glue: about ${Math.round((Math.max(ESTIMATES.wasmBindgen, ESTIMATES.npm + ESTIMATES.cargo) + ESTIMATES.glue) / 60)} min on 2 cores (npm start serves then, and wasm-opt's smaller module follows about ${ESTIMATES.wasmOpt} s later)`);
    installBindgenInBackground();
  }
}

function npm() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  const since = Date.now();
  progress(`npm ci (about ${ESTIMATES.npm} s)`);
  try {
    run('npm', ['ci', '--no-audit', '--no-fund']);
  } catch (e) {
    // npm 11 can write a lockfile that its own `npm ci` refuses (optional packages left out).
    console.error(`[setup] npm ci failed (${e.message}); falling back to npm install`);
    run('npm', ['install', '--no-audit', '--no-fund']);
  }
  progress(`npm packages installed in ${seconds(since)}`);
}

export function setup({ withRust = true } = {}) {
  // The CLI's install first: it runs on in the background through npm ci and the crate's build.
  if (withRust) rust();
  npm();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
  // Nothing builds here: wait for the CLI's install.
  wasmBindgenReady();
}
