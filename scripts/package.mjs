//! `npm run package`: writes dist/mcp-edge-<version>.tgz, the npm package of the prebuilt Worker
//! (its wasm and JS, built here) and the `mcp-edge` command (cli/). Its users need Node and npm,
//! never Rust: their folder holds a configuration and a wrangler.toml, and upgrading is
//! installing a newer package.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root, run, setup } from './setup.mjs';
import { build } from './build.mjs';

/** The repository's dev dependencies the package needs at run time. */
const RUNTIME = ['wrangler', 'miniflare', '@apidevtools/swagger-parser', 'swagger2openapi', 'picomatch'];

/** Builds the release worker and packs it; returns the tarball's path. */
export function pack() {
  setup();
  build();
  const repo = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const stage = join(root, 'target', 'package');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'build'), { recursive: true });
  for (const f of ['index.js', 'index_bg.wasm', 'codemode.js']) cpSync(join(root, 'build', f), join(stage, 'build', f));
  cpSync(join(root, 'cli'), join(stage, 'cli'), { recursive: true });
  cpSync(join(root, 'README.md'), join(stage, 'README.md'));
  cpSync(join(root, 'docs'), join(stage, 'docs'), { recursive: true });
  const pkg = {
    name: repo.name,
    version: repo.version,
    description: repo.description,
    license: 'Apache-2.0',
    type: 'module',
    engines: repo.engines,
    bin: { 'mcp-edge': 'cli/mcp-edge.mjs' },
    files: ['build/', 'cli/', 'docs/', 'README.md'],
    // The versions the repository tests with: wrangler serves and deploys, Miniflare runs `check`,
    // swagger-parser, swagger2openapi and picomatch read documents for `import-openapi`.
    dependencies: Object.fromEntries(RUNTIME.map((name) => [name, repo.devDependencies[name]])),
  };
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  const dist = join(root, 'dist');
  mkdirSync(dist, { recursive: true });
  run('npm', ['pack', '--silent', '--pack-destination', dist], { cwd: stage, stdio: ['ignore', 'ignore', 'inherit'] });
  const tarball = join(dist, `${pkg.name}-${pkg.version}.tgz`);
  console.error(`[package] ${tarball}`);
  return tarball;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) pack();
