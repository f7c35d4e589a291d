//! Installs the third-party clients the compatibility tests drive, once, under .mcp-edge/:
//! the n8n-nodes-mcp node (with the SDK npm picks for it, or forced onto 1.16.0) and the Python
//! SDK in its own venvs. `npm test` installs them all before the tests start (`installClients`),
//! so that no test file's time limit covers a download.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
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

/** A venv with the Python SDK `mcp==version`; returns its python. */
export function pythonSdk(version) {
  const dir = join(cache, `python-mcp-${version}`);
  const python = join(dir, 'bin', 'python');
  if (!existsSync(join(dir, 'installed'))) {
    run('python3', ['-m', 'venv', dir], root);
    run(python, ['-m', 'pip', 'install', '--quiet', `mcp==${version}`], root);
    writeFileSync(join(dir, 'installed'), version);
  }
  return python;
}
