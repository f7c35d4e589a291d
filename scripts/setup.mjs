//! Installs what building and testing need, when it is missing: the wasm32 Rust target,
//! worker-build, the wasm-bindgen CLI that matches Cargo.lock, and the npm packages.
//! Quick when everything is already there.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const root = dirname(dirname(fileURLToPath(import.meta.url)));
export const WORKER_BUILD_VERSION = '0.8.7';

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

function rust() {
  const targets = output('rustup', ['target', 'list', '--installed']) ?? '';
  if (!targets.split('\n').includes('wasm32-unknown-unknown')) {
    run('rustup', ['target', 'add', 'wasm32-unknown-unknown']);
  }
  if (!(output('worker-build', ['--version']) ?? '').includes(WORKER_BUILD_VERSION)) {
    run('cargo', ['install', 'worker-build', '--version', WORKER_BUILD_VERSION, '--locked']);
  }
  const bindgen = lockedWasmBindgen();
  if (!(output('wasm-bindgen', ['--version']) ?? '').endsWith(` ${bindgen}`)) {
    run('cargo', ['install', 'wasm-bindgen-cli', '--version', bindgen, '--locked']);
  }
}

function npm() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  try {
    run('npm', ['ci', '--no-audit', '--no-fund']);
  } catch (e) {
    // npm 11 can write a lockfile that its own `npm ci` refuses (optional packages left out).
    console.error(`[setup] npm ci failed (${e.message}); falling back to npm install`);
    run('npm', ['install', '--no-audit', '--no-fund']);
  }
}

export function setup({ withRust = true } = {}) {
  npm();
  if (withRust) rust();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  setup();
}
