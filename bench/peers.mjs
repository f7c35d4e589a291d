//! The bench's Workers peers: Cloudflare's `agents` handlers (`createMcpHandler`, `McpAgent`,
//! installed from bench/peers/package.json and bundled by wrangler as `wrangler deploy` would)
//! the fetch-only floor, and that floor in Rust (bench/peers/rust-floor), as Miniflare options. bench/run.mjs and bench/coldstart.mjs serve
//! them the same way.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root, run } from '../scripts/setup.mjs';

/** Installs the `agents` peers (pinned in bench/peers/package.json) and bundles each with
 *  wrangler, as `wrangler deploy` would; returns the bundles' paths. Quick when present. */
export function peerBundles() {
  const peers = join(root, '.mcp-edge', 'bench-peers');
  mkdirSync(peers, { recursive: true });
  const manifest = readFileSync(join(root, 'bench', 'peers', 'package.json'), 'utf8');
  const installed = existsSync(join(peers, 'package.json')) && readFileSync(join(peers, 'package.json'), 'utf8') === manifest;
  if (!installed || !existsSync(join(peers, 'node_modules', 'agents'))) {
    writeFileSync(join(peers, 'package.json'), manifest);
    run('npm', ['install', '--no-audit', '--no-fund', '--prefix', peers]);
  }
  const bundles = {};
  for (const [name, toml] of [['create-mcp-handler', ''], ['mcp-agent', '\n[[durable_objects.bindings]]\nname = "MCP_OBJECT"\nclass_name = "EchoAgent"\n\n[[migrations]]\ntag = "v1"\nnew_sqlite_classes = ["EchoAgent"]\n']]) {
    writeFileSync(join(peers, `src-${name}.js`), readFileSync(join(root, 'bench', 'peers', `${name}.js`)));
    writeFileSync(join(peers, `${name}.toml`), `name = "bench-${name}"\nmain = "src-${name}.js"\ncompatibility_date = "2026-04-01"\ncompatibility_flags = ["nodejs_compat"]\n${toml}`);
    run(join(root, 'node_modules', '.bin', 'wrangler'), ['deploy', '--dry-run', '--config', join(peers, `${name}.toml`), '--outdir', join(peers, `out-${name}`)], { stdio: ['ignore', 'ignore', 'inherit'] });
    bundles[name] = join(peers, `out-${name}`, `src-${name}.js`);
  }
  return bundles;
}

/** Miniflare's options for the peer `name` (`fetch-only`, `rust-floor`, `create-mcp-handler`, `mcp-agent`),
 *  given the bundles `peerBundles` made and the upstream they call. */
export function workerPeer(name, bundles, upstreamUrl) {
  const bindings = { UPSTREAM_URL: upstreamUrl };
  switch (name) {
    case 'fetch-only':
      return { modules: true, scriptPath: join(root, 'bench', 'peers', 'fetch-only.js'), bindings };
    // The same work in Rust on the `worker` crate (bench/peers/rust-floor), built as mcp-edge is.
    case 'rust-floor':
      return { modulesRoot: bundles['rust-floor'], modules: [{ type: 'ESModule', path: join(bundles['rust-floor'], 'index.js') }, { type: 'CompiledWasm', path: join(bundles['rust-floor'], 'index_bg.wasm') }], bindings };
    case 'create-mcp-handler':
      return { modules: true, scriptPath: bundles['create-mcp-handler'], compatibilityFlags: ['nodejs_compat'], bindings };
    case 'mcp-agent':
      return { modules: true, scriptPath: bundles['mcp-agent'], compatibilityFlags: ['nodejs_compat'], durableObjects: { MCP_OBJECT: { className: 'EchoAgent', useSQLite: true } }, bindings };
    default:
      throw new Error(`no peer ${name}`);
  }
}
