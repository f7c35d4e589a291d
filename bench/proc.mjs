//! What the bench reads of the processes it starts: which workerd belongs to a Miniflare
//! instance, and its CPU time and resident memory, from /proc.
import { spawnSync } from 'node:child_process';
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

export function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

export function rssMiB(pid) {
  const kb = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
  return kb / 1024;
}
