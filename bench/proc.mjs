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
 * Counts the user-space instructions `pid` retires and the cycles it takes until `stop()`, with
 * any `extra` perf events, which resolves to the counts by event name (`instructions`, `cycles`,
 * then each extra event as given). `undefined` when `perf` is missing or the host exposes no
 * hardware counters. Cycles over instructions says how much of a CPU-time gap is code that runs
 * slower per instruction (cache and branch misses), not more of it.
 */
export function countUserEvents(pid, extra = []) {
  countUserEvents.available ??= perfCounts();
  if (!countUserEvents.available) return undefined;
  const events = ['instructions:u', 'cycles:u', ...extra];
  const child = spawn('perf', ['stat', '-x,', '-e', events.join(','), '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  // `perf stat -x,` writes `count,unit,event,…` per event, scaled when the counters were shared;
  // it may drop the `:u` suffix.
  const named = (event) => event.replace(/:u$/, '');
  const count = (event) => {
    const line = err.split('\n').map((l) => l.split(',')).find((f) => f[2] === event || f[2] === named(event));
    return line ? Number(line[0]) : NaN;
  };
  const ended = new Promise((resolve) => child.on('close', () => resolve(Object.fromEntries(events.map((e) => [named(e), count(e)])))));
  return { stop: () => (child.kill('SIGINT'), ended) };
}

/** Why perf counts no instructions on this host: its own words. */
export function perfUnavailable() {
  const probe = spawnSync('perf', ['stat', '-x,', '-e', 'instructions:u,cycles:u', '--', 'true'], { encoding: 'utf8' });
  if (probe.error) return `perf: ${probe.error.code === 'ENOENT' ? 'not installed' : probe.error.message}`;
  const said = probe.stderr.split('\n').filter((l) => /instructions|not supported|not counted|permission/i.test(l)).join('; ').trim();
  return `\`perf stat -e instructions:u\` said: ${said || `exit status ${probe.status}`}`;
}

function perfCounts() {
  const probe = spawnSync('perf', ['stat', '-x,', '-e', 'instructions:u,cycles:u', '--', 'true'], { encoding: 'utf8' });
  return !probe.error && probe.status === 0 && /^\d+,[^,]*,instructions/m.test(probe.stderr) && /^\d+,[^,]*,cycles/m.test(probe.stderr);
}

export function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

export function rssMiB(pid) {
  const kb = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
  return kb / 1024;
}
