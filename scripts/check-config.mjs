//! `npm run check-config [file]`: validates a configuration file (default mcp-edge.json) and
//! reports the first fault with its exact path, as `mcp-edge check` does: with the Worker's own
//! module, in workerd. Builds the module first when its sources changed.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { root, setup } from './setup.mjs';
import { build } from './build.mjs';

setup();
build();
const r = spawnSync(process.execPath, [join(root, 'cli', 'mcp-edge.mjs'), 'check', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
