//! `npm run check-config [file]`: validates a configuration file (default mcp-edge.json) and
//! reports the first fault with its exact path.
import { spawnSync } from 'node:child_process';
import { root } from './setup.mjs';

const file = process.argv[2] ?? 'mcp-edge.json';
const r = spawnSync('cargo', ['run', '--quiet', '--bin', 'check-config', '--', file], { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
