//! What the bench reads of the processes it starts: which workerd belongs to a Miniflare
//! instance, and its CPU time and resident memory, from /proc; and, where `perf` can count
//! them, the instructions it retires; and, where `perf` can sample, its stacks over time
//! (bench/pauses.mjs, bench/coldperf.mjs).
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

/** `perf record` of cpu-clock samples with call graphs into `file` (`args`: `-p <pid>`, `-a`…);
 *  resolves to a function that stops it and waits until the file is written. Times are
 *  CLOCK_MONOTONIC, as `process.hrtime` reads it. */
export function perfRecord(args, file, hz = 1000) {
  const perf = spawn('perf', ['record', '-q', '-k', 'CLOCK_MONOTONIC', '-e', 'cpu-clock', '-F', String(hz), '-g', '-o', file, ...args], { stdio: 'ignore' });
  return () => {
    perf.kill('SIGINT');
    return new Promise((r) => perf.on('close', r));
  };
}

/** The samples `perfRecord` wrote, of process `pid` only when given: each one's thread, time
 *  (µs) and stack, innermost frame first, as symbol names (`[unknown]` for JIT code). */
export function perfSamples(file, pid) {
  const args = ['script', '-i', file, ...(pid ? ['--pid', String(pid)] : []), '-F', 'tid,time,ip,sym'];
  const out = spawnSync('perf', args, { encoding: 'utf8', maxBuffer: 1 << 30 }).stdout;
  return out.split('\n\n').flatMap((block) => {
    const lines = block.trim().split('\n');
    const head = /^\s*(\d+)\s+([\d.]+):/.exec(lines[0] ?? '');
    if (!head) return [];
    const frames = lines.slice(1).map((l) => l.trim().replace(/^[0-9a-f]+\s+/, '').replace(/\s*\(.*$/, '')).filter(Boolean);
    return [{ tid: head[1], us: Number(head[2]) * 1e6, frames }];
  });
}
