//! Installs the third-party clients the compatibility tests drive, once, under .mcp-edge/:
//! the n8n-nodes-mcp node (with the SDK npm picks for it, or forced onto 1.16.0), the Python
//! SDK in its own venvs, and n8n's own MCP Server Trigger (the server side of n8n, for
//! tests/e2e/n8n_trigger.test.mjs). `npm test` installs them all before the tests start
//! (`installClients`), so that no test file's time limit covers a download.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../../scripts/setup.mjs';

const cache = join(root, '.mcp-edge');

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.stdout}`);
}

/** The SDKs n8n-nodes-mcp runs on: as npm resolves it, and forced onto 1.16.0. */
export const N8N_SDKS = [undefined, '1.16.0'];
/** The Python SDK versions the tests drive. */
export const PYTHON_SDKS = ['2.3.0', '1.30.0'];

export function installClients() {
  for (const sdk of N8N_SDKS) n8nNode(sdk);
  for (const version of PYTHON_SDKS) pythonSdk(version);
  n8nTrigger();
  fastmcp();
}

/** n8n-nodes-mcp with n8n-workflow 1.110.0 (newer ones need a native addon); `sdk` forces the SDK. */
export function n8nNode(sdk) {
  const dir = join(cache, `n8n-nodes-mcp-${sdk ?? 'default'}`);
  if (!existsSync(join(dir, 'node_modules', 'n8n-nodes-mcp'))) {
    mkdirSync(dir, { recursive: true });
    const manifest = { private: true, dependencies: { 'n8n-nodes-mcp': '0.1.37', 'n8n-workflow': '1.110.0' } };
    if (sdk) manifest.overrides = { '@modelcontextprotocol/sdk': sdk };
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
    run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock'], dir);
  }
  return dir;
}

/** A venv under .mcp-edge/ with the PyPI package `name==version`; returns its python. */
function venv(name, version) {
  const dir = join(cache, `python-${name}-${version}`);
  const python = join(dir, 'bin', 'python');
  if (!existsSync(join(dir, 'installed'))) {
    run('python3', ['-m', 'venv', dir], root);
    run(python, ['-m', 'pip', 'install', '--quiet', `${name}==${version}`], root);
    writeFileSync(join(dir, 'installed'), version);
  }
  return python;
}

/** A venv with the Python SDK `mcp==version`; returns its python. */
export function pythonSdk(version) {
  return venv('mcp', version);
}

/** The FastMCP release (PyPI `fastmcp`) an upstream of tests/e2e/listen_fanin.test.mjs runs on. */
export const FASTMCP = '4.1.6';

/** A venv with `fastmcp==FASTMCP`; returns its python. */
export function fastmcp() {
  return venv('fastmcp', FASTMCP);
}

/** The @n8n/n8n-nodes-langchain release whose MCP Server Trigger the tests serve. */
export const N8N_TRIGGER = '2.41.1';

/**
 * n8n's MCP Server Trigger without the rest of n8n (the whole package would bring n8n-core,
 * n8n-nodes-base and dozens of langchain packages): the packages its McpServer and node require,
 * at the versions @n8n/n8n-nodes-langchain 2.41.1 pins, and beside them, taken from the
 * registry's tarballs, only the files the tests load: the trigger's directory, the JSON Schema
 * entry of @n8n/ai-utilities and the Webhook node's authentication of n8n-nodes-base. Install
 * scripts are skipped: n8n-workflow's expression sandbox (isolated-vm, a native addon) is never
 * loaded on this path. Returns the directory, whose node_modules the harness loads from.
 */
export function n8nTrigger() {
  const dir = join(cache, `n8n-mcp-trigger-${N8N_TRIGGER}`);
  if (!existsSync(join(dir, 'installed'))) {
    mkdirSync(dir, { recursive: true });
    const dependencies = {
      // McpServer.js and the files it requires.
      '@modelcontextprotocol/sdk': '1.26.0',
      '@langchain/core': '1.2.8',
      '@n8n/config': '2.39.0',
      '@n8n/di': '0.17.0',
      'n8n-workflow': '2.41.0',
      zod: '3.25.76',
      // @n8n/ai-utilities/json-schema (@n8n/ai-utilities 0.34.1).
      'zod-to-json-schema': '3.23.3',
      '@n8n/utils': '1.48.0',
      // The Webhook node's authentication (n8n-nodes-base 2.41.1).
      'basic-auth': '2.0.1',
      jsonwebtoken: '9.0.3',
    };
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies }, null, 2));
    run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--ignore-scripts'], dir);
    // After the install, which would prune them as extraneous.
    const tarballs = join(dir, 'tarballs');
    rmSync(tarballs, { recursive: true, force: true });
    mkdirSync(tarballs);
    const parts = [
      [`@n8n/n8n-nodes-langchain@${N8N_TRIGGER}`, `n8n-n8n-nodes-langchain-${N8N_TRIGGER}.tgz`, '@n8n/n8n-nodes-langchain', ['dist/nodes/mcp/McpTrigger']],
      ['@n8n/ai-utilities@0.34.1', 'n8n-ai-utilities-0.34.1.tgz', '@n8n/ai-utilities', ['dist/cjs/json-schema']],
      ['n8n-nodes-base@2.41.1', 'n8n-nodes-base-2.41.1.tgz', 'n8n-nodes-base', ['dist/nodes/Webhook/error.js', 'dist/nodes/Webhook/utils.js']],
    ];
    run('npm', ['pack', '--silent', '--pack-destination', tarballs, ...parts.map(([spec]) => spec)], dir);
    for (const [, tarball, name, paths] of parts) {
      const into = join(dir, 'node_modules', name);
      rmSync(into, { recursive: true, force: true });
      mkdirSync(into, { recursive: true });
      const members = ['package.json', 'LICENSE.md', ...paths].map((p) => `package/${p}`);
      run('tar', ['-xzf', join(tarballs, tarball), '-C', into, '--strip-components=1', ...members], dir);
    }
    rmSync(tarballs, { recursive: true, force: true });
    writeFileSync(join(dir, 'installed'), N8N_TRIGGER);
  }
  return dir;
}
