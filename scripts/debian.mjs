//! Debian packages the tests need beyond npm (Chromium, Prometheus, python3-venv), installed with
//! apt-get when missing: as root, or through `sudo -n`; `apt-get update` once per process.
import { spawnSync } from 'node:child_process';

let updated = false;

function onPath(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
}

/** Installs `packages`, or says why it cannot: `what` names what is missing (a path, a module).
 *  `recommends: false` leaves out the packages' recommendations. */
export function aptInstall(packages, what, { recommends = true } = {}) {
  const named = packages.join(' ');
  let prefix;
  if (process.getuid?.() === 0) prefix = [];
  else if (onPath('sudo')) prefix = ['sudo', '-n'];
  else throw new Error(`${what} is missing, and installing it needs root or sudo: run \`apt-get install -y ${named}\` as root, then \`npm test\` again`);
  if (!onPath('apt-get')) throw new Error(`${what} is missing and this system has no apt-get: install Debian's ${named}`);
  const apt = (args) => {
    const [cmd, ...rest] = [...prefix, 'apt-get', ...args];
    console.error(`[setup] ${cmd} ${rest.join(' ')}`);
    const r = spawnSync(cmd, rest, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (r.status !== 0) throw new Error(`${[cmd, ...rest].join(' ')} failed with ${r.status ?? r.signal}`);
  };
  if (!updated) {
    apt(['update']);
    updated = true;
  }
  apt(['install', '-y', ...(recommends ? [] : ['--no-install-recommends']), ...packages]);
}
