//! Serves a built worker directory in workerd through Miniflare's API: the same runtime as
//! `wrangler dev`, without its DevTools instrumentation. Tests and the conformance run use it.
import { readFileSync } from 'node:fs';
import { Miniflare } from 'miniflare';
import { COMPATIBILITY_DATE, COMPATIBILITY_FLAGS, drain, workerModules as modules } from '../cli/worker.mjs';
import { inlineApps } from '../cli/apps.mjs';

export { drain };

/** The built worker in `dir` as Miniflare's modules, with the configuration file `config` as
 *  the `mcp-edge-config` module: its text, as the Worker reads it (src/edge/config.js), with its
 *  apps' templates read in (cli/apps.mjs). */
export function workerModules(dir, config) {
  return modules(dir, inlineApps(readFileSync(config, 'utf8'), config));
}

/** Starts the worker in `dir`, configured by the file `config`, with `bindings` (vars and
 *  secrets) on 127.0.0.1:`port`; `analyticsEngineDatasets`: Miniflare's local Analytics Engine
 *  bindings, `{BINDING: {dataset}}`; `wrapModules`: the bench's meter (bench/meter.mjs) puts its
 *  own entry in front of the Worker's modules; `workerLoaders`: the Worker Loader bindings (a test
 *  of a deployment without one passes `{}`). */
export function serveWorker({ dir, config, bindings, port = 0, persist = false, handleRuntimeStdio = drain, ratelimits = {}, analyticsEngineDatasets, wrapModules = (m) => m, workerLoaders = { LOADER: {} }, inspectorPort }) {
  return new Miniflare({
    modulesRoot: dir,
    modules: wrapModules(workerModules(dir, config)),
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: COMPATIBILITY_FLAGS,
    durableObjects: { MCP_SESSIONS: 'McpSession' },
    // Keep in step with wrangler.toml: queued tools, their consumer and its dead-letter queue.
    queueProducers: { TOOL_QUEUE: { queueName: 'mcp-edge-tools' } },
    queueConsumers: {
      'mcp-edge-tools': { maxBatchSize: 1, maxBatchTimeout: 0, maxRetries: 2, deadLetterQueue: 'mcp-edge-tools-dlq' },
      'mcp-edge-tools-dlq': { maxBatchSize: 1, maxBatchTimeout: 0 },
    },
    durableObjectsPersist: persist,
    ratelimits,
    // Code mode's programs run in Dynamic Workers from this binding (wrangler.toml's worker_loaders).
    workerLoaders,
    ...(analyticsEngineDatasets ? { analyticsEngineDatasets } : {}),
    // V8's inspector, for CPU profiles (bench/profile.mjs).
    ...(inspectorPort ? { inspectorPort } : {}),
    // Local, whatever a request claims: the Host check always applies (src/policy.rs at_edge). A
    // test of the edge's trust sets it to '' in `bindings`.
    bindings: { MCP_EDGE_LOCAL: '1', ...bindings },
    host: '127.0.0.1',
    port,
    handleRuntimeStdio,
  });
}
