//! What the bench reads of the processes it starts: which workerd belongs to a Miniflare
//! instance, and its CPU time and resident memory, from /proc; and, where `perf` can count
//! them, the instructions it retires.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TICKS = 100; // USER_HZ on Linux

/** Processes whose parent is `parent` and whose command name starts with `name`. */
export function childPids(parent, name) {
  const out = spawnSync('ps', ['-eo', 'pid=,ppid=,comm='], { encoding: 'utf8' }).stdout;
  const rows = out.trim().split('\n').map((l) => l.trim().split(/\s+/));
  const found = [];
  const walk = (pid) => {
    for (const [p, pp, comm] of rows) {
      if (Number(pp) === pid) {
        if (comm.startsWith(name)) found.push(Number(p));
        walk(Number(p));
      }
    }
  };
  walk(parent);
  return found;
}

/**
 * Counts the user-space instructions `pid` retires until `stop()`, which resolves to the count.
 * `undefined` when `perf` is missing or the host exposes no hardware counters.
 */
export function countInstructions(pid) {
  countInstructions.available ??= perfCounts();
  if (!countInstructions.available) return undefined;
  const child = spawn('perf', ['stat', '-x,', '-e', 'instructions:u', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const ended = new Promise((resolve) => child.on('close', () => resolve(Number(err.match(/^(\d+),/m)?.[1]))));
  return { stop: () => (child.kill('SIGINT'), ended) };
}

function perfCounts() {
  const probe = spawnSync('perf', ['stat', '-x,', '-e', 'instructions:u', '--', 'true'], { encoding: 'utf8' });
  return !probe.error && probe.status === 0 && /^\d+,/m.test(probe.stderr);
}

export function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

export function rssMiB(pid) {
  const kb = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
  return kb / 1024;
}
