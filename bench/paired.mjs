//! One bench/ab.mjs run over several targets (a build directory, `=` a configuration file), and
//! its line for each parsed: CPU per call, the median of the paired rounds' ratio over the first
//! target, requests per second, bad replies. Shared by the benches that compare configurations
//! of one build (bench/tracing.mjs, bench/governance.mjs).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { root } from '../scripts/setup.mjs';

/** `targets`: `{ name, target }` each; `env`, more of bench/ab.mjs's settings (AB_PREPARE,
 *  AB_BINDINGS); resolves to one row per target, in order. */
export async function paired(targets, { rounds, seconds, env = {} }) {
  const output = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bench', 'ab.mjs'), ...targets.map((t) => t.target)], {
      env: { ...process.env, ...env, AB_ROUNDS: String(rounds), AB_SECONDS: String(seconds) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`bench/ab.mjs exited with ${code}: ${out}`))));
  });
  return targets.map((t) => {
    const line = output.split('\n').find((l) => l.startsWith(`${t.target}:`));
    if (!line) throw new Error(`bench/ab.mjs printed no line for ${t.name}: ${output}`);
    return {
      name: t.name,
      us_per_call: Number(/: (\d+) µs CPU per call/.exec(line)?.[1]),
      us_rounds: (/µs CPU per call \(rounds ([\d ]+)\)/.exec(line)?.[1] ?? '').split(' ').filter(Boolean).map(Number),
      // Over the first target in the same rounds.
      ratio_to_first: Number(/, ([0-9.]+)× the first's/.exec(line)?.[1] ?? 1),
      rps: Number(/, (\d+) req\/s/.exec(line)?.[1]),
      bad: Number(/, (\d+) bad replies/.exec(line)?.[1]),
      // What AB_PREPARE's `report` said of this target, when it has one.
      report: JSON.parse(output.split('\n').find((l) => l.startsWith(`${t.target} report: `))?.slice(`${t.target} report: `.length) ?? 'null'),
      line,
    };
  });
}
