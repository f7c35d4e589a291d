//! Installs what the sign-in tests need beyond npm and the e2e clients: Debian's Chromium, which
//! playwright-core drives (it never downloads a browser of its own). `npm test` calls
//! `installBrowser()` before any test starts, so no test file's time limit covers a download.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where Debian's `chromium` package puts the browser; tests/oauth/browser.mjs launches it. */
export const CHROMIUM = '/usr/bin/chromium';

function apt(prefix, args) {
  const [cmd, ...rest] = [...prefix, 'apt-get', ...args];
  console.error(`[setup] ${cmd} ${rest.join(' ')}`);
  const r = spawnSync(cmd, rest, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (r.status !== 0) throw new Error(`${[cmd, ...rest].join(' ')} failed with ${r.status ?? r.signal}`);
}

function onPath(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
}

/** Installs Debian's `chromium` when /usr/bin/chromium is missing: `apt-get update` once, then
 *  `apt-get install -y chromium`, as root or through sudo. */
export function installBrowser() {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  let prefix;
  if (process.getuid?.() === 0) prefix = [];
  else if (onPath('sudo')) prefix = ['sudo', '-n'];
  else {
    throw new Error(`${CHROMIUM} is missing, and installing it needs root or sudo: run \`apt-get install -y chromium\` as root, then \`npm test\` again`);
  }
  if (!onPath('apt-get')) {
    throw new Error(`${CHROMIUM} is missing and this system has no apt-get: install Debian's chromium package (or a Chromium at ${CHROMIUM})`);
  }
  apt(prefix, ['update']);
  apt(prefix, ['install', '-y', 'chromium']);
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} is still missing`);
  return CHROMIUM;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(installBrowser());
}
