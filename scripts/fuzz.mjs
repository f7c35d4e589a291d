//! `npm run fuzz`: runs every cargo-fuzz target in fuzz/ for a bounded time (FUZZ_SECONDS each,
//! default 60), starting from the committed seeds in fuzz/seeds/<target>. Installs the nightly
//! toolchain and cargo-fuzz when missing. New inputs go to .mcp-edge/fuzz-corpus, crashes to
//! fuzz/artifacts/<target>; any crash fails the run.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { root, run } from './setup.mjs';

const seconds = Number(process.env.FUZZ_SECONDS ?? 60);
const only = process.argv.slice(2);
const has = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8' }).status === 0;

if (!has('rustup', ['run', 'nightly', 'rustc', '--version'])) run('rustup', ['toolchain', 'install', 'nightly', '--profile', 'minimal']);
if (!has('cargo', ['fuzz', '--version'])) run('cargo', ['install', 'cargo-fuzz', '--locked']);

const targets = readdirSync(join(root, 'fuzz', 'fuzz_targets')).map((f) => f.replace(/\.rs$/, '')).filter((t) => !only.length || only.includes(t));
const report = [];
let failed = false;
for (const target of targets) {
  const corpus = join(root, '.mcp-edge', 'fuzz-corpus', target);
  mkdirSync(corpus, { recursive: true });
  const args = ['+nightly', 'fuzz', 'run', '--fuzz-dir', 'fuzz', target, corpus, join('fuzz', 'seeds', target), '--', `-max_total_time=${seconds}`, '-rss_limit_mb=2048', '-timeout=10'];
  console.error(`[fuzz] cargo ${args.join(' ')}`);
  // libFuzzer's status lines pass Node's 1 MiB default within minutes, which would kill it.
  const r = spawnSync('cargo', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'], maxBuffer: 1024 * 1024 * 1024 });
  const log = r.stderr ?? '';
  const done = log.match(/Done (\d+) runs in (\d+) second/);
  const crash = r.status !== 0;
  failed ||= crash;
  report.push(`${target}: ${done ? `${done[1]} runs in ${done[2]} s` : 'did not finish'}${crash ? ` — FAILED (status ${r.status}); see fuzz/artifacts/${target}\n${log.split('\n').filter((l) => /panicked|ERROR|SUMMARY|artifact/.test(l)).join('\n')}` : ', no crash'}`);
}
console.log(report.join('\n'));
process.exit(failed ? 1 : 0);
